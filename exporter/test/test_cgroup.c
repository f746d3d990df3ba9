/*
 * test_cgroup — pod UID and container ID from every cgroup path format the kubelet and the runtimes
 * produce, read from text and from a fake proc tree, and refusal of garbage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exporter/cgroup.h"
#include "fake_state.h"

#define UID "1b7f5c52-3a7e-4bd4-9f4e-6d2c8b0e9a11"
#define UID_ "1b7f5c52_3a7e_4bd4_9f4e_6d2c8b0e9a11"
#define CID "4f9c1e8a2b3d4c5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6"

static void expect(const char *text, const char *uid, const char *cid)
{
    struct fg_cgroup_ident id;
    char msg[FG_ERRMSG_MAX] = "";
    enum fg_err err = fg_cgroup_parse(text, strlen(text), &id, msg);
    if (err != FG_OK)
        fail_msg("%s: %s (%s)", text, fg_err_name(err), msg);
    assert_string_equal(id.pod_uid, uid);
    assert_string_equal(id.container_id, cid);
}

static void test_v1_cgroupfs(void **state)
{
    (void)state;
    expect("12:memory:/kubepods/burstable/pod" UID "/" CID "\n"
           "11:cpu,cpuacct:/kubepods/burstable/pod" UID "/" CID "\n1:name=systemd:/kubepods/burstable/pod" UID "/" CID "\n",
           UID, CID);
    expect("4:devices:/kubepods/pod" UID "/" CID "\n", UID, CID);                 /* guaranteed QoS */
    expect("4:devices:/kubepods/besteffort/pod" UID "/crio-" CID "\n", UID, CID);  /* CRI-O, cgroupfs */
}

static void test_v1_systemd(void **state)
{
    (void)state;
    expect("10:memory:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
           ".slice/cri-containerd-" CID ".scope\n", UID, CID);
    expect("3:cpuset:/kubepods.slice/kubepods-pod" UID_ ".slice/docker-" CID ".scope\n", UID, CID);
}

static void test_v2_systemd(void **state)
{
    (void)state;
    expect("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" CID
           ".scope\n", UID, CID);
    /* CRI-O: the container scope, never conmon's */
    expect("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/crio-" CID ".scope\n",
           UID, CID);
    expect("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/crio-conmon-" CID
           ".scope\n", UID, "");
    /* the containerd form with the runtime after colons */
    expect("0::/system.slice/containerd.service/kubepods-burstable-pod" UID_ ".slice:cri-containerd:" CID "\n", UID,
           CID);
}

static void test_v2_cgroupfs(void **state)
{
    (void)state;
    expect("0::/kubepods/burstable/pod" UID "/" CID "\n", UID, CID);
}

static void test_hybrid(void **state)
{
    (void)state;
    /* v1 controllers plus the v2 unified line; the pod comes from wherever it is named */
    expect("12:pids:/\n11:memory:/\n1:name=systemd:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
           ".slice/cri-containerd-" CID ".scope\n0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
           ".slice/cri-containerd-" CID ".scope\n", UID, CID);
    /* a line naming only the pod is improved on by one that names the container too */
    expect("5:blkio:/kubepods/burstable/pod" UID "\n0::/kubepods/burstable/pod" UID "/" CID "\n", UID, CID);
}

static void test_nested_and_namespaced(void **state)
{
    (void)state;
    /* kind: the node is itself a container */
    expect("0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
           "kubelet-kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" CID ".scope\n", UID, CID);
    expect("7:memory:/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/kubepods/burstable/pod" UID
           "/" CID "\n", UID, CID);
    /* read from inside a cgroup namespace */
    expect("0::/../../kubepods-burstable-pod" UID_ ".slice/cri-containerd-" CID ".scope\n", UID, CID);
    /* static pods: a 32-digit config hash as UID */
    expect("0::/kubepods/burstable/pod0123456789abcdef0123456789abcdef/" CID "\n", "0123456789abcdef0123456789abcdef",
           CID);
}

static void test_host_process(void **state)
{
    (void)state;
    struct fg_cgroup_ident id;
    const char *t = "0::/system.slice/nvidia-persistenced.service\n";
    assert_int_equal(fg_cgroup_parse(t, strlen(t), &id, NULL), FG_E_NOT_FOUND_LOCAL);
    t = "0::/kubepods.slice/kubepods-burstable.slice\n";   /* a QoS slice is no pod */
    assert_int_equal(fg_cgroup_parse(t, strlen(t), &id, NULL), FG_E_NOT_FOUND_LOCAL);
    t = "0::/kubepods/burstable/podnot-a-uid/" CID "\n";
    assert_int_equal(fg_cgroup_parse(t, strlen(t), &id, NULL), FG_E_NOT_FOUND_LOCAL);
}

static void test_garbage(void **state)
{
    (void)state;
    struct fg_cgroup_ident id;
    char msg[FG_ERRMSG_MAX] = "";
    static const char *const bad[] = { "", "\n\n", "hello world\n", "x:memory:/kubepods\n", "12:memory\n",
                                       "12:memory:kubepods/pod" UID "\n", "\x01\x02\xff:\n" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        msg[0] = '\0';
        assert_int_equal(fg_cgroup_parse(bad[i], strlen(bad[i]), &id, msg), FG_E_PARSE);
        assert_true(msg[0] != '\0');
        assert_string_equal(id.pod_uid, "");
    }
    /* embedded NUL and no trailing newline */
    const char nul[] = "0::/kubepods/pod" UID "/" CID "\0garbage";
    assert_int_equal(fg_cgroup_parse(nul, sizeof nul - 1, &id, msg), FG_E_PARSE);
    const char *nonl = "0::/kubepods/pod" UID "/" CID;
    assert_int_equal(fg_cgroup_parse(nonl, strlen(nonl), &id, msg), FG_OK);
    assert_string_equal(id.container_id, CID);
    /* a container ID too long for the buffer is not taken */
    char longid[400];
    snprintf(longid, sizeof longid, "0::/kubepods/pod" UID "/%0300d\n", 0);
    assert_int_equal(fg_cgroup_parse(longid, strlen(longid), &id, msg), FG_OK);
    assert_string_equal(id.container_id, "");
}

static void test_proc_tree(void **state)
{
    (void)state;
    char dir[64], root[96], msg[FG_ERRMSG_MAX] = "";
    fg_test_fake_dir(dir);
    snprintf(root, sizeof root, "%s/proc", dir);
    fg_test_fake_cgroup(dir, 100, "0::/kubepods/burstable/pod" UID "/" CID "\n");
    fg_test_fake_cgroup(dir, 101, "garbage");
    fg_test_fake_cgroup(dir, 102, "0::/kubepods/pod" UID "/" CID "\n");
    char path[160];
    snprintf(path, sizeof path, "%s/proc/102/cgroup", dir);
    chmod(path, 0);
    struct fg_cgroup_ident id;
    assert_int_equal(fg_cgroup_read_pid(root, 100, &id, msg), FG_OK);
    assert_string_equal(id.pod_uid, UID);
    assert_int_equal(fg_cgroup_read_pid(root, 101, &id, msg), FG_E_PARSE);
    assert_int_equal(fg_cgroup_read_pid(root, 999, &id, msg), FG_E_IO);   /* exited */
    assert_non_null(strstr(msg, "999"));
    if (geteuid() != 0)   /* root reads mode-0 files anyway */
        assert_int_equal(fg_cgroup_read_pid(root, 102, &id, msg), FG_E_IO);
    /* unreadable whoever reads it: the "file" is a directory */
    snprintf(path, sizeof path, "%s/proc/104", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/proc/104/cgroup", dir);
    mkdir(path, 0755);
    msg[0] = '\0';
    assert_int_equal(fg_cgroup_read_pid(root, 104, &id, msg), FG_E_IO);
    assert_true(msg[0] != '\0');
    /* a huge file is refused, not read whole */
    snprintf(path, sizeof path, "%s/proc/103", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/proc/103/cgroup", dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 20000; i++)
        fputs("0::/system.slice\n", f);
    fclose(f);
    assert_int_equal(fg_cgroup_read_pid(root, 103, &id, msg), FG_E_PARSE);
    fg_test_fake_rm(dir);
}

/* The example proc tree that the demo and docs use stays parseable. */
static void test_examples(void **state)
{
    (void)state;
    const char *src = getenv("FG_SOURCE_DIR");
    if (!src)
        skip();
    char root[512];
    snprintf(root, sizeof root, "%s/e2e/fake-nvml/examples/proc", src);
    struct fg_cgroup_ident id;
    assert_int_equal(fg_cgroup_read_pid(root, 4242, &id, NULL), FG_OK);
    assert_string_equal(id.pod_uid, "0e6a4a3c-2b1f-4c8e-9d7a-5b3e2f1a0c01");
    assert_int_equal(strlen(id.container_id), 64);
    assert_int_equal(fg_cgroup_read_pid(root, 4243, &id, NULL), FG_OK);
    assert_string_equal(id.pod_uid, "0e6a4a3c-2b1f-4c8e-9d7a-5b3e2f1a0c02");
    assert_int_equal(strlen(id.container_id), 64);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v1_cgroupfs), cmocka_unit_test(test_v1_systemd), cmocka_unit_test(test_v2_systemd),
        cmocka_unit_test(test_v2_cgroupfs), cmocka_unit_test(test_hybrid), cmocka_unit_test(test_nested_and_namespaced),
        cmocka_unit_test(test_host_process), cmocka_unit_test(test_garbage), cmocka_unit_test(test_proc_tree),
        cmocka_unit_test(test_examples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
