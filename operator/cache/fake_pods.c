/* fake_pods — realistic pods for tests and benchmarks; see fake_pods.h. */
#include "fake_pods.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

/* The template; %1$s namespace, %2$s name, %3$u index, %4$s node name. */
static const char POD_TEMPLATE[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%2$s\",\"generateName\":\"%2$s-\","
    "\"namespace\":\"%1$s\",\"uid\":\"6f1c1a52-%3$04x-4c1e-9b55-%3$012u\",\"resourceVersion\":\"1\","
    "\"creationTimestamp\":\"2026-11-20T10:00:00Z\",\"labels\":{\"app\":\"llm-serving\",\"pod-template-hash\":"
    "\"7d9f8b6c5\",\"team\":\"inference\",\"fracgpu.io/automate\":\"true\"},\"annotations\":{"
    "\"kubectl.kubernetes.io/last-applied-configuration\":\"{\\\"apiVersion\\\":\\\"v1\\\",\\\"kind\\\":\\\"Pod\\\","
    "\\\"metadata\\\":{\\\"labels\\\":{\\\"app\\\":\\\"llm-serving\\\"},\\\"name\\\":\\\"%2$s\\\",\\\"namespace\\\":"
    "\\\"%1$s\\\"},\\\"spec\\\":{\\\"containers\\\":[{\\\"image\\\":\\\"registry.example.com/llm/server:1.4.2\\\","
    "\\\"name\\\":\\\"server\\\",\\\"resources\\\":{\\\"limits\\\":{\\\"nvidia.com/gpu\\\":\\\"1\\\"}}}]}}\","
    "\"fracgpu.io/policy\":\"near-real-time\",\"prometheus.io/scrape\":\"true\"},\"ownerReferences\":[{"
    "\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"llm-serving-7d9f8b6c5\",\"uid\":"
    "\"0a4d2f1e-1111-4c1e-9b55-000000000001\",\"controller\":true,\"blockOwnerDeletion\":true}],"
    "\"managedFields\":[{\"manager\":\"kube-controller-manager\",\"operation\":\"Update\",\"apiVersion\":\"v1\","
    "\"time\":\"2026-11-20T10:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:generateName\":{},"
    "\"f:labels\":{\".\":{},\"f:app\":{},\"f:pod-template-hash\":{},\"f:team\":{}},\"f:ownerReferences\":{\".\":{},"
    "\"k:{\\\"uid\\\":\\\"0a4d2f1e-1111-4c1e-9b55-000000000001\\\"}\":{}}},\"f:spec\":{\"f:containers\":{"
    "\"k:{\\\"name\\\":\\\"server\\\"}\":{\".\":{},\"f:args\":{},\"f:env\":{\".\":{},\"k:{\\\"name\\\":\\\"MODEL\\\"}\":"
    "{\".\":{},\"f:name\":{},\"f:value\":{}},\"k:{\\\"name\\\":\\\"PORT\\\"}\":{\".\":{},\"f:name\":{},\"f:value\":{}}},"
    "\"f:image\":{},\"f:imagePullPolicy\":{},\"f:livenessProbe\":{\".\":{},\"f:failureThreshold\":{},\"f:httpGet\":{"
    "\".\":{},\"f:path\":{},\"f:port\":{},\"f:scheme\":{}},\"f:periodSeconds\":{}},\"f:name\":{},\"f:ports\":{\".\":{},"
    "\"k:{\\\"containerPort\\\":8080,\\\"protocol\\\":\\\"TCP\\\"}\":{\".\":{},\"f:containerPort\":{},\"f:name\":{},"
    "\"f:protocol\":{}}},\"f:resources\":{\".\":{},\"f:limits\":{\".\":{},\"f:cpu\":{},\"f:memory\":{},"
    "\"f:nvidia.com/gpu\":{}},\"f:requests\":{\".\":{},\"f:cpu\":{},\"f:memory\":{}}},\"f:terminationMessagePath\":{},"
    "\"f:volumeMounts\":{\".\":{},\"k:{\\\"mountPath\\\":\\\"/models\\\"}\":{\".\":{},\"f:mountPath\":{},\"f:name\":{}}}}},"
    "\"f:dnsPolicy\":{},\"f:enableServiceLinks\":{},\"f:restartPolicy\":{},\"f:schedulerName\":{},"
    "\"f:securityContext\":{},\"f:terminationGracePeriodSeconds\":{},\"f:volumes\":{\".\":{},"
    "\"k:{\\\"name\\\":\\\"models\\\"}\":{\".\":{},\"f:name\":{},\"f:persistentVolumeClaim\":{}}}}}},"
    "{\"manager\":\"kubelet\",\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":\"2026-11-20T10:00:09Z\","
    "\"fieldsType\":\"FieldsV1\",\"subresource\":\"status\",\"fieldsV1\":{\"f:status\":{\"f:conditions\":{"
    "\"k:{\\\"type\\\":\\\"ContainersReady\\\"}\":{\".\":{},\"f:lastProbeTime\":{},\"f:lastTransitionTime\":{},"
    "\"f:status\":{},\"f:type\":{}},\"k:{\\\"type\\\":\\\"Initialized\\\"}\":{\".\":{},\"f:lastProbeTime\":{},"
    "\"f:lastTransitionTime\":{},\"f:status\":{},\"f:type\":{}},\"k:{\\\"type\\\":\\\"Ready\\\"}\":{\".\":{},"
    "\"f:lastProbeTime\":{},\"f:lastTransitionTime\":{},\"f:status\":{},\"f:type\":{}}},\"f:containerStatuses\":{},"
    "\"f:hostIP\":{},\"f:phase\":{},\"f:podIP\":{},\"f:podIPs\":{\".\":{},\"k:{\\\"ip\\\":\\\"10.244.%3$u.7\\\"}\":"
    "{\".\":{},\"f:ip\":{}}},\"f:startTime\":{}}}},{\"manager\":\"fracgpu-scheduler\",\"operation\":\"Update\","
    "\"apiVersion\":\"v1\",\"time\":\"2026-11-20T10:00:02Z\",\"fieldsType\":\"FieldsV1\",\"subresource\":\"binding\","
    "\"fieldsV1\":{\"f:spec\":{\"f:nodeName\":{}}}}]},\"spec\":{\"volumes\":[{\"name\":\"models\","
    "\"persistentVolumeClaim\":{\"claimName\":\"models-cache\"}},{\"name\":\"kube-api-access-%3$u\",\"projected\":{"
    "\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},{\"configMap\":{"
    "\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":\"ca.crt\"}]}}],\"defaultMode\":420}}],"
    "\"initContainers\":[{\"name\":\"fetch-model\",\"image\":\"registry.example.com/llm/fetch:1.0\",\"resources\":{"
    "\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}}}],\"containers\":[{\"name\":\"server\",\"image\":"
    "\"registry.example.com/llm/server:1.4.2\",\"args\":[\"--model=/models/llama\",\"--port=8080\"],\"ports\":[{"
    "\"name\":\"http\",\"containerPort\":8080,\"protocol\":\"TCP\"}],\"env\":[{\"name\":\"MODEL\",\"value\":\"llama\"},"
    "{\"name\":\"PORT\",\"value\":\"8080\"}],\"resources\":{\"limits\":{\"cpu\":\"4\",\"memory\":\"16Gi\","
    "\"nvidia.com/gpu\":\"1\"},\"requests\":{\"cpu\":\"2\",\"memory\":\"8Gi\",\"nvidia.com/gpu\":\"1\"}},"
    "\"volumeMounts\":[{\"name\":\"models\",\"mountPath\":\"/models\"},{\"name\":\"kube-api-access-%3$u\","
    "\"readOnly\":true,\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}],\"livenessProbe\":{"
    "\"httpGet\":{\"path\":\"/healthz\",\"port\":8080,\"scheme\":\"HTTP\"},\"periodSeconds\":10,\"failureThreshold\":3},"
    "\"terminationMessagePath\":\"/dev/termination-log\",\"imagePullPolicy\":\"IfNotPresent\"},{\"name\":\"metrics\","
    "\"image\":\"registry.example.com/obs/sidecar:0.9\",\"resources\":{\"requests\":{\"cpu\":\"50m\",\"memory\":"
    "\"64Mi\"}},\"imagePullPolicy\":\"IfNotPresent\"}],\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,"
    "\"dnsPolicy\":\"ClusterFirst\",\"serviceAccountName\":\"default\",\"nodeName\":\"%4$s\",\"securityContext\":{},"
    "\"schedulerName\":\"fracgpu\",\"priority\":0,\"nodeSelector\":{\"nvidia.com/gpu.present\":\"true\"},\"affinity\":{"
    "\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
    "\"matchExpressions\":[{\"key\":\"nvidia.com/gpu.product\",\"operator\":\"In\",\"values\":[\"NVIDIA-H100-80GB-HBM3\","
    "\"NVIDIA-A100-SXM4-80GB\"]}]}]}}},\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":"
    "\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":\"node.kubernetes.io/unreachable\","
    "\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":\"nvidia.com/gpu\","
    "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],\"enableServiceLinks\":true,\"preemptionPolicy\":"
    "\"PreemptLowerPriority\"},\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Initialized\",\"status\":"
    "\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-20T10:00:05Z\"},{\"type\":\"Ready\",\"status\":"
    "\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-20T10:00:09Z\"},{\"type\":\"ContainersReady\","
    "\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-20T10:00:09Z\"},{\"type\":"
    "\"PodScheduled\",\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-20T10:00:02Z\"}],"
    "\"hostIP\":\"192.168.10.%3$u\",\"podIP\":\"10.244.%3$u.7\",\"podIPs\":[{\"ip\":\"10.244.%3$u.7\"}],\"startTime\":"
    "\"2026-11-20T10:00:02Z\",\"containerStatuses\":[{\"name\":\"server\",\"state\":{\"running\":{\"startedAt\":"
    "\"2026-11-20T10:00:08Z\"}},\"lastState\":{},\"ready\":true,\"restartCount\":0,\"image\":"
    "\"registry.example.com/llm/server:1.4.2\",\"imageID\":\"registry.example.com/llm/server@sha256:"
    "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945\",\"containerID\":\"containerd://"
    "9b1a3f3e2d4c5b6a79808f7e6d5c4b3a29180f7e6d5c4b3a2918%3$012u\",\"started\":true},{\"name\":\"metrics\",\"state\":"
    "{\"running\":{\"startedAt\":\"2026-11-20T10:00:08Z\"}},\"lastState\":{},\"ready\":true,\"restartCount\":0,"
    "\"image\":\"registry.example.com/obs/sidecar:0.9\",\"imageID\":\"registry.example.com/obs/sidecar@sha256:"
    "b5bb9d8014a0f9b1d61e21e796d78dccdf1352f23cd32812f4850b878ae4944c\",\"containerID\":\"containerd://"
    "1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b%3$012u\",\"started\":true}],\"qosClass\":\"Burstable\"}}";

json_object *fg_fake_pod_new(const char *ns, const char *name_prefix, unsigned i, const char *node)
{
    char *name = fg_asprintf("%s-%u", name_prefix, i);
    char *text = fg_asprintf(POD_TEMPLATE, ns, name, i, node ? node : "");
    json_object *pod = json_tokener_parse(text);
    free(text);
    free(name);
    if (!node)
        json_object_object_del(json_object_object_get(pod, "spec"), "nodeName");
    return pod;
}
