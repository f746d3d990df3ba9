/*
 * kubectl-fracgpu — the kubectl plugin: `kubectl fracgpu gpus | workloads | explain POD`.
 *
 * kubectl runs any executable named kubectl-<name> on the PATH for `kubectl <name>`, with the
 * arguments that follow; this one reads the cluster through the API server only (nodes, pods,
 * GPUWorkloads: the `view` ClusterRole and `get nodes` suffice) and prints what views.h describes.
 * Flags follow kubectl's: --kubeconfig, --context, -n/--namespace, -A/--all-namespaces,
 * -o/--output json|yaml|wide, anywhere on the line, `--flag value` or `--flag=value`. The
 * kubeconfig is --kubeconfig, else $KUBECONFIG, else ~/.kube/config (in a pod: its service
 * account); the namespace is -n, else the context's. Exit status 0, 1 when the cluster cannot be
 * read (the reason on stderr), 2 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "kubectl-fracgpu/views.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/kube/resource.h"
#include "reconcilers/resources.h"

#define CAP_NS "fracgpu-system"

struct args {
    const char *kubeconfig, *context, *ns, *output, *command, *pod;
    bool all_namespaces, help;
};

static int usage(FILE *out, int status)
{
    fprintf(out,
            "kubectl fracgpu — the GPUs fracgpu shares, and the workloads it sizes.\n\n"
            "usage:\n"
            "  kubectl fracgpu gpus [-o wide|json|yaml]        every GPU: node, capacity pod, sharing, tenants,\n"
            "                                                  allocated and measured compute and memory\n"
            "  kubectl fracgpu workloads [-n NS | -A] [-o ...]  GPUWorkloads: allocation against use, GPUs saved\n"
            "  kubectl fracgpu explain POD [-n NS] [-o ...]     why a pod is where it is, or why it waits\n\n"
            "flags: --kubeconfig FILE, --context NAME, -n/--namespace NS, -A/--all-namespaces,\n"
            "       -o/--output wide|json|yaml, -h/--help\n");
    return status;
}

static int bad(const char *fmt, const char *what)
{
    fprintf(stderr, "error: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\nSee 'kubectl fracgpu --help' for usage.\n");
    return 2;
}

/* The value of flag `name` (long `--name`, short `-s`) at argv[*i], or NULL when argv[*i] is not it. */
static const char *flag_value(int argc, char **argv, int *i, const char *name, const char *shorty, bool *missing)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (!strncmp(a, "--", 2) && !strncmp(a + 2, name, n) && a[2 + n] == '=')
        return a + 3 + n;
    if ((!strncmp(a, "--", 2) && !strcmp(a + 2, name)) || (shorty && !strcmp(a, shorty))) {
        if (*i + 1 >= argc) {
            *missing = true;
            return NULL;
        }
        return argv[++*i];
    }
    return NULL;
}

static int parse(int argc, char **argv, struct args *a)
{
    memset(a, 0, sizeof(*a));
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v;
        if ((v = flag_value(argc, argv, &i, "kubeconfig", NULL, &missing)))
            a->kubeconfig = v;
        else if (!missing && (v = flag_value(argc, argv, &i, "context", NULL, &missing)))
            a->context = v;
        else if (!missing && (v = flag_value(argc, argv, &i, "namespace", "-n", &missing)))
            a->ns = v;
        else if (!missing && (v = flag_value(argc, argv, &i, "output", "-o", &missing)))
            a->output = v;
        else if (missing)
            return bad("flag needs an argument: %s", argv[i]);
        else if (!strcmp(argv[i], "-A") || !strcmp(argv[i], "--all-namespaces"))
            a->all_namespaces = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            a->help = true;
        else if (argv[i][0] == '-')
            return bad("unknown flag: %s", argv[i]);
        else if (!a->command)
            a->command = argv[i];
        else if (!a->pod)
            a->pod = argv[i];
        else
            return bad("unexpected argument: %s", argv[i]);
    }
    if (a->help)
        return 0;
    if (!a->command)
        return bad("%s", "a command is required: gpus, workloads or explain POD");
    if (strcmp(a->command, "gpus") && strcmp(a->command, "workloads") && strcmp(a->command, "explain"))
        return bad("unknown command \"%s\": gpus, workloads or explain POD", a->command);
    if (!strcmp(a->command, "explain") && !a->pod)
        return bad("%s", "explain needs a pod: kubectl fracgpu explain POD");
    if (strcmp(a->command, "explain") && a->pod)
        return bad("unexpected argument: %s", a->pod);
    if (a->pod && !strncmp(a->pod, "pod/", 4))
        a->pod += 4;
    if (a->output && strcmp(a->output, "wide") && strcmp(a->output, "json") && strcmp(a->output, "yaml"))
        return bad("unable to match a printer suitable for the output format \"%s\": wide, json and yaml are allowed",
                   a->output);
    return 0;
}

static void collect(void *ud, json_object *item)
{
    json_object_array_add(ud, json_object_get(item));
}

/* The items of res in ns (NULL: every namespace) into *out (a new array). A resource the server does
 * not serve (404: the CRD is not installed) is an empty list when optional. */
static int list(struct fg_kube_client *c, const struct fg_kube_resource *res, const char *ns, bool optional,
                json_object **out)
{
    *out = json_object_new_array();
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_list(c, res, ns, NULL, collect, *out, NULL, &st);
    if (err == FG_E_KUBE_NOT_FOUND && optional) {
        fg_kube_status_cleanup(&st);
        return 0;
    }
    if (err) {
        if (err == FG_E_KUBE_NOT_FOUND)
            fprintf(stderr, "error: the server does not serve %s.%s: is fracgpu installed? (kubectl apply -k manifests/)\n",
                    res->plural, res->group);
        else
            fprintf(stderr, "error: cannot list %s: %s%s%s\n", res->plural, fg_err_str(err), st.message ? ": " : "",
                    st.message ? st.message : "");
        fg_kube_status_cleanup(&st);
        return 1;
    }
    fg_kube_status_cleanup(&st);
    return 0;
}

static int run(const struct args *a, struct fg_kube_client *c, const char *ns)
{
    struct fgk_view_opts o = { .output = a->output, .all_namespaces = a->all_namespaces, .cap_ns = CAP_NS };
    json_object *nodes = NULL, *pods = NULL, *workloads = NULL, *pod = NULL;
    int rc = 0;
    if (!strcmp(a->command, "workloads")) {
        rc = list(c, &fg_crd_gpuworkloads, a->all_namespaces ? NULL : ns, false, &workloads);
        if (!rc)
            fgk_view_workloads(workloads, &o, stdout);
    } else {
        rc = list(c, &fg_kube_nodes, NULL, false, &nodes) || list(c, &fg_kube_pods, NULL, false, &pods) ||
             list(c, &fg_crd_gpuworkloads, NULL, true, &workloads);
        if (!rc && !strcmp(a->command, "gpus")) {
            fgk_view_gpus(nodes, pods, workloads, &o, stdout);
        } else if (!rc) {
            char *path = fg_kube_path(&fg_kube_pods, ns, a->pod, NULL, NULL);
            struct fg_kube_status st = { 0 };
            enum fg_err err = fg_kube_get(c, path, &pod, &st);
            free(path);
            if (err == FG_E_KUBE_NOT_FOUND)
                fprintf(stderr, "error: pods \"%s\" not found in namespace %s\n", a->pod, ns);
            else if (err)
                fprintf(stderr, "error: cannot get pod %s/%s: %s\n", ns, a->pod, fg_err_str(err));
            else
                fgk_view_explain(pod, nodes, pods, workloads, &o, stdout);
            rc = err ? 1 : 0;
            fg_kube_status_cleanup(&st);
        }
    }
    json_object_put(nodes);
    json_object_put(pods);
    json_object_put(workloads);
    json_object_put(pod);
    return rc;
}

int main(int argc, char **argv)
{
    fg_log_set_level(FG_LOG_ERROR);
    struct args a;
    int status = parse(argc, argv, &a);
    if (status || a.help)
        return a.help ? usage(stdout, 0) : status;
    struct fg_kube_config cfg;
    char errmsg[FG_ERRMSG_MAX] = "";
    enum fg_err err = fg_kube_config_load_default(a.kubeconfig, a.context, &cfg, errmsg);
    if (err) {
        fprintf(stderr, "error: %s\n", errmsg);
        return 1;
    }
    struct fg_kube_client *c = NULL;
    struct fg_kube_client_opts opts = FG_KUBE_CLIENT_OPTS_DEFAULT;
    opts.user_agent = "kubectl-fracgpu/" FG_VERSION;
    if (fg_kube_client_new(&cfg, &opts, &c, errmsg)) {
        fprintf(stderr, "error: %s\n", errmsg);
        fg_kube_config_cleanup(&cfg);
        return 1;
    }
    status = run(&a, c, a.ns ? a.ns : cfg.namespace ? cfg.namespace : "default");
    fg_kube_client_free(c);
    fg_kube_config_cleanup(&cfg);
    return status;
}
