/*
 * fuzz_exec_credential — what an exec credential plugin prints: a client.authentication.k8s.io
 * ExecCredential.
 *
 * The bytes are a plugin's stdout, read by fg__kube_exec_parse (module-internal, exec_internal.h) as
 * the credential cache reads it, for both API versions a kubeconfig may ask for. A credential that
 * parses is copied, as the cache hands it to callers, and both are cleared and freed.
 */
#include "fuzz/fuzz.h"
#include "operator/kube/exec_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const versions[] = { "client.authentication.k8s.io/v1",
                                            "client.authentication.k8s.io/v1beta1" };
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        struct fg__kube_cred cred, copy;
        char msg[FG_ERRMSG_MAX];
        if (fg__kube_exec_parse(versions[i], (const char *)data, size, &cred, msg) != FG_OK)
            continue;
        fg__kube_cred_copy(&copy, &cred);
        fg__kube_cred_cleanup(&copy);
        fg__kube_cred_cleanup(&cred);
    }
    return 0;
}
