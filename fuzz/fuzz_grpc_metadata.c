/*
 * fuzz_grpc_metadata — the header values gRPC gives a format of its own, as a peer sends them.
 *
 * The bytes are one header value: read as a grpc-timeout (a client's deadline), a content-type, a
 * header name, and a grpc-message (a peer's status text, percent-encoded), all module-internal
 * readers of nodeagent/grpc (metadata_int.h). A grpc-message is also encoded the way this side
 * sends one and decoded again, which must give back the start of the text: anything else aborts.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "nodeagent/grpc/metadata_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t ns;
    if (fg__grpc_timeout_parse(data, size, &ns)) {
        char again[FG__GRPC_TIMEOUT_MAX];
        fg__grpc_timeout_format(ns / 1000000, again);
    }
    (void)fg__grpc_content_type_ok(data, size);
    (void)fg__grpc_name_is(data, size, "grpc-message");

    char *text = fg__grpc_percent_decode(data, size);
    char *encoded = fg__grpc_percent_encode(text);
    char *back = fg__grpc_percent_decode((const uint8_t *)encoded, strlen(encoded));
    if (strncmp(back, text, strlen(back)) != 0)
        abort(); /* what this side sends does not read back as what it meant */
    free(back);
    free(encoded);
    free(text);
    return 0;
}
