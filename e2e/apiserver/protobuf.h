/*
 * protobuf — request bodies in Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf),
 * decoded into the JSON objects the rest of the server works on.
 *
 * kubectl's `create` generators (namespace, configmap, secret, serviceaccount, deployment, job,
 * priorityclass, quota, role, rolebinding, clusterrole, clusterrolebinding) send their objects this way:
 * the 4 bytes "k8s\0", then a runtime.Unknown whose typeMeta names apiVersion and kind and whose raw
 * bytes are the object's own message. kube.proto declares the subset of those messages the server
 * stores, with the published field numbers; protoc-c turns it into C at build time. A decoded message
 * becomes JSON by walking its descriptor (field names are the JSON names), so a kind is decoded once its
 * message is declared and listed in protobuf.c's table. Nothing outside e2e/apiserver includes this
 * header.
 */
#ifndef FG_E2E_APISERVER_PROTOBUF_H
#define FG_E2E_APISERVER_PROTOBUF_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* The media type, without parameters. */
#define FG__PROTOBUF_MEDIA_TYPE "application/vnd.kubernetes.protobuf"

/* Decodes a protobuf body sent to a resource of group/version/kind (group "" for core) into *out, a
 * new JSON object that the caller puts. FG_E_KUBE_UNSUPPORTED_MEDIA when the kind is well formed but
 * not one this server decodes; FG_E_KUBE_BAD_REQUEST when the prefix is missing, the envelope or the
 * object message is malformed, or the body's apiVersion or kind is not the resource's. errmsg
 * (FG_ERRMSG_MAX) says which; *out stays NULL on error. */
enum fg_err fg__protobuf_decode(const char *group, const char *version, const char *kind, const uint8_t *data,
                                size_t len, json_object **out, char *errmsg) FG_MUST_USE;

#endif
