/* Replies: each of the three forms gives exactly the granted GPU (CDI name, mount list, env), and
 * always sets NVIDIA_VISIBLE_DEVICES so the pod's own value cannot widen it; mps adds the pipe and
 * shm of that GPU's daemon and the tenant's limits. Form detection reads a host root: a CDI spec
 * for nvidia.com/gpu in either directory, the runtime's volume-mount switch (commented-out or false
 * lines do not count), else envvar; form names parse and bad ones are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fs.h"
#include "nodeagent/deviceplugin/reply.h"

#define UUID "GPU-5f2c1d9e-0000-4000-8000-000000000001"

static const char *env_of(const struct fg_dp_reply *r, const char *name)
{
    for (size_t i = 0; i < r->nenvs; i++)
        if (strcmp(r->envs[i].name, name) == 0)
            return r->envs[i].value;
    return NULL;
}

static void three_forms(void **state)
{
    (void)state;
    struct fg_dp_grant_view g = { UUID, false, 300, 20480, "/run/fracgpu/mps" };
    struct fg_dp_reply r;
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_dp_reply_build(FG_DP_FORM_ENVVAR, &g, &r, msg), FG_OK);
    assert_string_equal(env_of(&r, "NVIDIA_VISIBLE_DEVICES"), UUID);
    assert_int_equal(r.nmounts, 0);
    assert_string_equal(r.cdi_device, "");

    assert_int_equal(fg_dp_reply_build(FG_DP_FORM_CDI, &g, &r, msg), FG_OK);
    assert_string_equal(r.cdi_device, "nvidia.com/gpu=" UUID);
    assert_string_equal(env_of(&r, "NVIDIA_VISIBLE_DEVICES"), UUID);
    assert_int_equal(r.nmounts, 0);

    assert_int_equal(fg_dp_reply_build(FG_DP_FORM_VOLUME_MOUNTS, &g, &r, msg), FG_OK);
    assert_int_equal(r.nmounts, 1);
    assert_string_equal(r.mounts[0].container_path, FG_DP_MOUNTS_DIR "/" UUID);
    assert_string_equal(r.mounts[0].host_path, "/dev/null");
    assert_true(r.mounts[0].read_only);
    assert_string_equal(env_of(&r, "NVIDIA_VISIBLE_DEVICES"), FG_DP_MOUNTS_DIR);
    assert_null(env_of(&r, "CUDA_MPS_PIPE_DIRECTORY"));
}

static void mps_tenant(void **state)
{
    (void)state;
    struct fg_dp_grant_view g = { UUID, true, 250, 8192, "/run/fracgpu/mps" };
    struct fg_dp_reply r;
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_dp_reply_build(FG_DP_FORM_CDI, &g, &r, msg), FG_OK);
    assert_int_equal(r.nmounts, 2);
    assert_string_equal(r.mounts[0].container_path, FG_DP_MPS_PIPE);
    assert_string_equal(r.mounts[0].host_path, "/run/fracgpu/mps/" UUID "/pipe");
    assert_string_equal(r.mounts[1].container_path, "/dev/shm");
    assert_string_equal(r.mounts[1].host_path, "/run/fracgpu/mps/" UUID "/shm");
    assert_string_equal(env_of(&r, "CUDA_MPS_PIPE_DIRECTORY"), FG_DP_MPS_PIPE);
    assert_string_equal(env_of(&r, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
    assert_string_equal(env_of(&r, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=8192M");
    g.compute_milli = 4, g.memory_mib = 0; /* a sliver: at least 1%; the whole memory: no limit */
    assert_int_equal(fg_dp_reply_build(FG_DP_FORM_ENVVAR, &g, &r, msg), FG_OK);
    assert_string_equal(env_of(&r, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "1");
    assert_null(env_of(&r, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"));
    g.gpu_uuid = "../../etc"; /* never a path outside the MPS root */
    assert_int_equal(fg_dp_reply_build(FG_DP_FORM_ENVVAR, &g, &r, msg), FG_E_INVAL);
}

static void write_file(const char *root, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s%s", root, rel);
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = '\0';
    assert_int_equal(fg_mkdir_p(dir), 0);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void detects_forms(void **state)
{
    (void)state;
    char root[] = "/tmp/fg-dp-form-XXXXXX";
    assert_non_null(mkdtemp(root));
    char why[FG_ERRMSG_MAX];
    assert_int_equal(fg_dp_form_detect(root, why), FG_DP_FORM_ENVVAR);
    assert_non_null(strstr(why, "no NVIDIA CDI spec"));

    write_file(root, "/etc/nvidia-container-runtime/config.toml",
               "# accept-nvidia-visible-devices-as-volume-mounts = true\n"
               "accept-nvidia-visible-devices-as-volume-mounts = false\n");
    assert_int_equal(fg_dp_form_detect(root, why), FG_DP_FORM_ENVVAR);
    write_file(root, "/etc/nvidia-container-runtime/config.toml",
               "[nvidia-container-cli]\n  accept-nvidia-visible-devices-as-volume-mounts = true # hardened\n");
    assert_int_equal(fg_dp_form_detect(root, why), FG_DP_FORM_VOLUME_MOUNTS);

    write_file(root, "/etc/cdi/other.yaml", "cdiVersion: 0.6.0\nkind: example.com/fpga\n");
    assert_int_equal(fg_dp_form_detect(root, why), FG_DP_FORM_VOLUME_MOUNTS); /* not NVIDIA's */
    write_file(root, "/var/run/cdi/nvidia.json", "{\"cdiVersion\":\"0.6.0\",\"kind\":\"nvidia.com/gpu\"}");
    assert_int_equal(fg_dp_form_detect(root, why), FG_DP_FORM_CDI);
    assert_non_null(strstr(why, "/var/run/cdi/nvidia.json"));
    assert_int_equal(fg_remove_tree(root), 0);
}

static void form_names(void **state)
{
    (void)state;
    enum fg_dp_form f;
    static const char *const names[] = { "auto", "envvar", "volume-mounts", "cdi-cri" };
    for (int i = 0; i < 4; i++) {
        assert_int_equal(fg_dp_form_parse(names[i], &f), FG_OK);
        assert_string_equal(fg_dp_form_name(f), names[i]);
    }
    assert_int_equal(fg_dp_form_parse("cdi", &f), FG_E_INVAL);
    assert_int_equal(fg_dp_form_parse(NULL, &f), FG_E_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(three_forms), cmocka_unit_test(mps_tenant),
                                        cmocka_unit_test(detects_forms), cmocka_unit_test(form_names) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
