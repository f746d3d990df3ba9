/*
 * random — random bytes and UUIDs for uids, generated names and admission request uids.
 *
 * OpenSSL's generator, drawn 4 KiB at a time into a pool per thread: one RAND_bytes call costs about
 * as much as a thousand bytes from it, and a create needs a few dozen. Each server's loop thread has
 * a pool of its own, so servers on different threads of one process share nothing.
 */
#ifndef FG_E2E_APISERVER_RANDOM_H
#define FG_E2E_APISERVER_RANDOM_H

#include <stddef.h>

/* Fills buf with n random bytes; aborts only if OpenSSL cannot seed its generator. */
void fg__random_bytes(void *buf, size_t n);
/* A random (version 4) UUID, as kube-apiserver's uids and admission request uids are. */
void fg__random_uuid(char out[37]);

#endif
