/*
 * pb_body — protobuf request bodies as kubectl sends them ("k8s\0" + runtime.Unknown + the object's
 * message), built with the C that protoc-c generates from e2e/apiserver/kube.proto. Shared by the
 * protobuf tests; every body is the caller's to free.
 */
#ifndef FG_E2E_APISERVER_TEST_PB_BODY_H
#define FG_E2E_APISERVER_TEST_PB_BODY_H

#include <stddef.h>
#include <stdint.h>

#include "kube.pb-c.h"

/* "k8s\0" + runtime.Unknown{typeMeta{apiVersion, kind}, raw}; *len its size. */
uint8_t *pb_envelope(const char *api_version, const char *kind, const uint8_t *raw, size_t raw_len, size_t *len);
/* The body for message m. */
uint8_t *pb_body(const char *api_version, const char *kind, const ProtobufCMessage *m, size_t *len);
/* The body `kubectl create job j --image=busybox -- echo hi` sends, with a label app=j. */
uint8_t *pb_job_body(size_t *len);

#endif
