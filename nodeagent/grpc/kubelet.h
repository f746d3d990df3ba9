/*
 * kubelet — where the kubelet's gRPC APIs live and what their methods are called.
 *
 * The device-plugin API (deviceplugin.proto, version v1beta1): the kubelet serves Registration on
 * FG_KUBELET_SOCKET in FG_KUBELET_DEVICE_PLUGIN_DIR; a plugin creates its own socket in the same
 * directory, serves DevicePlugin on it and registers with its file name (not its path) as the
 * endpoint. When the kubelet restarts it empties that directory, and plugins register again.
 * The PodResources API (podresources.proto, v1) is served on FG_KUBELET_POD_RESOURCES_SOCKET.
 *
 * Method paths are what fg_grpc_server's method table and fg_grpc_client's calls take: "/" package
 * "." service "/" method, exactly as gRPC puts them in :path.
 */
#ifndef FG_GRPC_KUBELET_H
#define FG_GRPC_KUBELET_H

#define FG_KUBELET_DEVICE_PLUGIN_DIR "/var/lib/kubelet/device-plugins/"
#define FG_KUBELET_SOCKET "kubelet.sock"
#define FG_DEVICE_PLUGIN_VERSION "v1beta1"
#define FG_KUBELET_POD_RESOURCES_SOCKET "/var/lib/kubelet/pod-resources/kubelet.sock"

#define FG_REGISTRATION_REGISTER "/v1beta1.Registration/Register"
#define FG_DEVICE_PLUGIN_GET_OPTIONS "/v1beta1.DevicePlugin/GetDevicePluginOptions"
#define FG_DEVICE_PLUGIN_LIST_AND_WATCH "/v1beta1.DevicePlugin/ListAndWatch"
#define FG_DEVICE_PLUGIN_GET_PREFERRED_ALLOCATION "/v1beta1.DevicePlugin/GetPreferredAllocation"
#define FG_DEVICE_PLUGIN_ALLOCATE "/v1beta1.DevicePlugin/Allocate"
#define FG_DEVICE_PLUGIN_PRE_START_CONTAINER "/v1beta1.DevicePlugin/PreStartContainer"
#define FG_POD_RESOURCES_LIST "/v1.PodResourcesLister/List"

/* Device health as ListAndWatch reports it. */
#define FG_DEVICE_HEALTHY "Healthy"
#define FG_DEVICE_UNHEALTHY "Unhealthy"

#endif
