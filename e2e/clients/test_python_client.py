"""The official Kubernetes Python client against the test API server.

kubectl is one real client of fracgpu-test-apiserver; this is a second one, written by neither this
project nor kubectl's authors: Debian's python3-kubernetes (the generated OpenAPI client with its own
kubeconfig loader, TLS stack and watch decoder). A scenario that passes with both is evidence that
the server speaks the API, not just what one client tolerates.

The test starts the server executable as a child process (the path is the first argument), reads the
address it prints once listening, loads the kubeconfig it wrote with
kubernetes.config.load_kube_config, and runs one scenario twice: over TLS with a bearer token, as a
real cluster is reached (where a request with no token or a wrong one gets 401), and over plain HTTP.
The scenario: create a namespace, a ConfigMap and a Pod; list pods by label selector; a watch from
the list's resourceVersion that must see the pod's ADDED, MODIFIED (after a strategic merge patch)
and DELETED events in that order; a merge patch of the ConfigMap; a replace with a stale
resourceVersion (409); get after delete (404); then the fracgpu CRDs from crds/*.yaml created through
ApiextensionsV1Api and a GPUPolicy created, listed, patched and deleted through CustomObjectsApi.
Around that: paging with limit/continue, field selectors, a JSON patch, a delete precondition, the
pod /status subresource, a watch that replays history, one that gets a BOOKMARK, and one from a
compacted resourceVersion that ends in 410. Last, the discovery-driven DynamicClient finds the
GPUPolicy and Deployment resources and creates, patches and deletes through them, and
utils.create_from_dict creates a List of two kinds.

Every wait is bounded: the server's start, each request (_request_timeout), the watch
(timeout_seconds and a thread join). The server is always stopped with SIGTERM, and killed if it
does not exit. Any failure exits non-zero with a message naming the step; a missing
python3-kubernetes or PyYAML is a failure, not a skip (scripts/setup.sh installs them).

Usage: test_python_client.py SERVER_BINARY CRD_DIR
"""

import glob
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

try:
    import yaml
    from kubernetes import client, config, dynamic, utils, watch
    from kubernetes.client.rest import ApiException
except ImportError as e:
    sys.exit("FAIL: %s: install python3-kubernetes and python3-yaml (scripts/setup.sh does)" % e)

START_TIMEOUT_S = 20
REQUEST_TIMEOUT_S = 10
WATCH_TIMEOUT_S = 15
TOKEN = "python-client-token"


class Server:
    """fracgpu-test-apiserver as a child process; stop() always ends it."""

    def __init__(self, binary, workdir, tls):
        self.kubeconfig = os.path.join(workdir, "kubeconfig-%s" % ("tls" if tls else "plain"))
        argv = [binary, "--listen", "127.0.0.1:0", "--kubeconfig-out", self.kubeconfig,
                "--log-level", "warn"]
        if tls:
            argv += ["--tls", "--token", TOKEN]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        self.address = self._read_address()

    def _read_address(self):
        ready, _, _ = select.select([self.proc.stdout], [], [], START_TIMEOUT_S)
        if not ready:
            raise AssertionError("server printed no address within %d s" % START_TIMEOUT_S)
        line = self.proc.stdout.readline().strip()
        if not line:
            status = self.proc.wait(timeout=START_TIMEOUT_S)
            raise AssertionError("server exited before listening (status %s)" % status)
        return line

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc.stdout.close()
        return self.proc.returncode


def expect_status(code, what, fn, *args, **kwargs):
    """Calls fn and asserts that it fails with an ApiException of the given HTTP status."""
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        assert e.status == code, "%s: want HTTP %d, got %d: %s" % (what, code, e.status, e.body)
        return
    raise AssertionError("%s: want HTTP %d, the call succeeded" % (what, code))


def watch_pods(v1, ns, rv, events, stop_after):
    """Collects (type, name, labels) of pod events in ns from rv until stop_after is seen."""
    w = watch.Watch()
    try:
        for ev in w.stream(v1.list_namespaced_pod, ns, resource_version=rv,
                           timeout_seconds=WATCH_TIMEOUT_S, _request_timeout=WATCH_TIMEOUT_S + 5):
            meta = ev["object"].metadata
            events.append((ev["type"], meta.name, dict(meta.labels or {})))
            if ev["type"] == stop_after:
                w.stop()
    except Exception as e:  # reported by the main thread, which checks the events
        events.append(("EXCEPTION", repr(e), {}))


def wait_for_watchers(api_client, want):
    """Polls the server's /fracgpu-test/stats until it holds `want` watch connections."""
    deadline = time.monotonic() + REQUEST_TIMEOUT_S
    while time.monotonic() < deadline:
        data, _, _ = api_client.call_api("/fracgpu-test/stats", "GET", response_type="object",
                                         _request_timeout=REQUEST_TIMEOUT_S)
        if data["watchers"] >= want:
            return
        time.sleep(0.05)
    raise AssertionError("the watch did not reach the server within %d s" % REQUEST_TIMEOUT_S)


def core_scenario(api_client):
    v1 = client.CoreV1Api(api_client)
    t = REQUEST_TIMEOUT_S
    ns = "pyclient"

    v1.create_namespace({"metadata": {"name": ns}}, _request_timeout=t)
    cm = v1.create_namespaced_config_map(ns, {"metadata": {"name": "settings"},
                                              "data": {"mode": "a"}}, _request_timeout=t)
    assert cm.data == {"mode": "a"}, "created ConfigMap data: %r" % cm.data

    before = v1.list_namespaced_pod(ns, _request_timeout=t)
    assert before.items == [], "new namespace holds pods: %r" % before.items
    rv = before.metadata.resource_version
    assert rv, "the pod list carries no resourceVersion"

    events = []
    watcher = threading.Thread(target=watch_pods, args=(v1, ns, rv, events, "DELETED"), daemon=True)
    watcher.start()
    wait_for_watchers(api_client, 1)

    pod = v1.create_namespaced_pod(ns, {
        "metadata": {"name": "worker", "labels": {"app": "trainer", "tier": "gpu"}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1"},
                                {"name": "side", "image": "pause:3"}]}}, _request_timeout=t)
    assert pod.status.phase == "Pending", "new pod phase %r" % pod.status.phase

    hits = v1.list_namespaced_pod(ns, label_selector="app=trainer,tier in (gpu)", _request_timeout=t)
    assert [p.metadata.name for p in hits.items] == ["worker"], "selector app=trainer: %r" % hits.items
    misses = v1.list_namespaced_pod(ns, label_selector="app!=trainer", _request_timeout=t)
    assert misses.items == [], "selector app!=trainer matched %r" % misses.items

    # Strategic merge: containers merge by name, so only "main" changes and "side" stays.
    patched = v1.patch_namespaced_pod("worker", ns, {
        "metadata": {"labels": {"stage": "patched"}},
        "spec": {"containers": [{"name": "main", "image": "busybox:2"}]}}, _request_timeout=t)
    images = {c.name: c.image for c in patched.spec.containers}
    assert images == {"main": "busybox:2", "side": "pause:3"}, "strategic merge gave %r" % images
    assert patched.metadata.labels.get("stage") == "patched", "labels %r" % patched.metadata.labels

    # patch_namespaced_config_map sends a dict as a strategic merge patch and this client version
    # takes no content type argument, so the RFC 7386 merge patch (null deletes a key) goes through
    # call_api, the path every generated method takes.
    cm2 = v1.api_client.call_api(
        "/api/v1/namespaces/{namespace}/configmaps/{name}", "PATCH",
        path_params={"namespace": ns, "name": "settings"},
        header_params={"Content-Type": "application/merge-patch+json", "Accept": "application/json"},
        body={"data": {"mode": None, "extra": "b"}}, response_type="V1ConfigMap",
        auth_settings=["BearerToken"], _return_http_data_only=True, _request_timeout=t)
    assert cm2.data == {"extra": "b"}, "merge patch gave %r" % cm2.data

    stale = v1.read_namespaced_pod("worker", ns, _request_timeout=t)
    stale.metadata.resource_version = pod.metadata.resource_version
    expect_status(409, "replace with a stale resourceVersion",
                  v1.replace_namespaced_pod, "worker", ns, stale, _request_timeout=t)

    v1.delete_namespaced_pod("worker", ns, _request_timeout=t)
    expect_status(404, "get after delete", v1.read_namespaced_pod, "worker", ns, _request_timeout=t)

    watcher.join(WATCH_TIMEOUT_S + 10)
    assert not watcher.is_alive(), "the watch did not end within its timeout"
    kinds = [(typ, name) for typ, name, _ in events]
    assert kinds == [("ADDED", "worker"), ("MODIFIED", "worker"), ("DELETED", "worker")], \
        "watch events %r" % events
    assert events[1][2].get("stage") == "patched", "MODIFIED carries labels %r" % events[1][2]

    v1.delete_namespace(ns, _request_timeout=t)
    expect_status(404, "ConfigMap after its namespace is deleted",
                  v1.read_namespaced_config_map, "settings", ns, _request_timeout=t)


def history_scenario(api_client):
    """Paging, field selectors, JSON patch, preconditions, /status, and watches from history."""
    v1 = client.CoreV1Api(api_client)
    t = REQUEST_TIMEOUT_S
    ns = "pyhistory"

    v1.create_namespace({"metadata": {"name": ns}}, _request_timeout=t)
    rv0 = v1.list_namespaced_config_map(ns, _request_timeout=t).metadata.resource_version
    for i in range(5):
        v1.create_namespaced_config_map(ns, {"metadata": {"name": "c%d" % i, "labels": {"n": str(i)}},
                                             "data": {"i": str(i)}}, _request_timeout=t)
    expect_status(409, "create of an existing name", v1.create_namespaced_config_map, ns,
                  {"metadata": {"name": "c0"}}, _request_timeout=t)
    expect_status(404, "create in a missing namespace", v1.create_namespaced_config_map, "nowhere",
                  {"metadata": {"name": "c0"}}, _request_timeout=t)
    generated = v1.create_namespaced_config_map(ns, {"metadata": {"generateName": "gen-"}},
                                                _request_timeout=t)
    assert generated.metadata.name.startswith("gen-") and len(generated.metadata.name) > 4, \
        "generateName gave %r" % generated.metadata.name
    v1.delete_namespaced_config_map(generated.metadata.name, ns, _request_timeout=t)

    jp = v1.patch_namespaced_config_map("c1", ns, [{"op": "replace", "path": "/data/i", "value": "x"}],
                                        _request_timeout=t)
    assert jp.data == {"i": "x"}, "JSON patch gave %r" % jp.data
    expect_status(409, "delete with a wrong uid precondition", v1.delete_namespaced_config_map, "c2", ns,
                  body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-the-uid")),
                  _request_timeout=t)
    v1.delete_namespaced_config_map("c2", ns, _request_timeout=t)

    names, cont, pages = [], None, 0
    while True:
        page = v1.list_namespaced_config_map(ns, limit=2, _continue=cont, _request_timeout=t)
        names += [c.metadata.name for c in page.items]
        pages += 1
        cont = page.metadata._continue
        if not cont:
            break
        assert pages < 10, "paging does not end: %r" % names
    assert names == ["c0", "c1", "c3", "c4"] and pages == 2, "pages of 2 gave %r in %d" % (names, pages)
    by_field = v1.list_namespaced_config_map(ns, field_selector="metadata.name=c4", _request_timeout=t)
    assert [c.metadata.name for c in by_field.items] == ["c4"], "field selector gave %r" % by_field.items

    # A watch from before the writes replays them from the server's history, in order.
    replay = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(
        v1.list_namespaced_config_map, ns, resource_version=rv0, timeout_seconds=1,
        _request_timeout=WATCH_TIMEOUT_S)]
    want = [("ADDED", "c%d" % i) for i in range(5)] + [
        ("ADDED", generated.metadata.name), ("DELETED", generated.metadata.name),
        ("MODIFIED", "c1"), ("DELETED", "c2")]
    assert replay == want, "replayed events %r" % replay

    v1.create_namespaced_pod(ns, {"metadata": {"name": "p"},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}},
                             _request_timeout=t)
    running = v1.patch_namespaced_pod_status("p", ns, {"status": {"phase": "Running"}}, _request_timeout=t)
    assert running.status.phase == "Running", "status patch gave %r" % running.status.phase
    phases = v1.list_pod_for_all_namespaces(field_selector="status.phase=Running", _request_timeout=t)
    assert [p.metadata.name for p in phases.items] == ["p"], "status.phase selector %r" % phases.items

    # Bookmarks decode, and the watch remembers their resourceVersion.
    w = watch.Watch()
    now = v1.list_namespaced_config_map(ns, _request_timeout=t).metadata.resource_version
    seen = []
    for e in w.stream(v1.list_namespaced_config_map, ns, resource_version=now, allow_watch_bookmarks=True,
                      timeout_seconds=5, _request_timeout=WATCH_TIMEOUT_S):
        seen.append(e["type"])
        if e["type"] == "BOOKMARK":
            w.stop()
    assert seen == ["BOOKMARK"], "want one BOOKMARK within 5 s, got %r" % seen
    assert w.resource_version == now, "bookmark resourceVersion %r, list said %r" % (w.resource_version, now)

    # Once the history is gone, a watch from an old resourceVersion ends in 410 Expired, which the
    # client raises (it retries only watches without timeout_seconds).
    api_client.call_api("/fracgpu-test/compact", "POST", response_type="object", _request_timeout=t)
    expect_status(410, "watch from a compacted resourceVersion", lambda: list(watch.Watch().stream(
        v1.list_namespaced_config_map, ns, resource_version=rv0, timeout_seconds=5,
        _request_timeout=WATCH_TIMEOUT_S)))

    v1.delete_namespace(ns, _request_timeout=t)


def crd_scenario(api_client, crd_dir):
    ext = client.ApiextensionsV1Api(api_client)
    custom = client.CustomObjectsApi(api_client)
    t = REQUEST_TIMEOUT_S

    paths = sorted(glob.glob(os.path.join(crd_dir, "*.yaml")))
    crds = []
    for path in paths:
        with open(path) as f:
            crds += [d for d in yaml.safe_load_all(f)
                     if d and d.get("kind") == "CustomResourceDefinition"]
    assert len(crds) >= 2, "want the GPUPolicy and GPUWorkload CRDs in %s, got %d" % (crd_dir, len(crds))
    for crd in crds:
        created = ext.create_custom_resource_definition(crd, _request_timeout=t)
        established = [c for c in created.status.conditions or [] if c.type == "Established"]
        assert established and established[0].status == "True", \
            "%s not Established: %r" % (crd["metadata"]["name"], created.status)
    names = {c.metadata.name for c in ext.list_custom_resource_definition(_request_timeout=t).items}
    assert "gpupolicies.fracgpu.io" in names, "CRD list %r" % names

    group, version, plural = "fracgpu.io", "v1alpha1", "gpupolicies"
    created = custom.create_cluster_custom_object(group, version, plural, {
        "apiVersion": "fracgpu.io/v1alpha1", "kind": "GPUPolicy",
        "metadata": {"name": "training", "labels": {"team": "ml"}},
        "spec": {"workloadClass": "training"}}, _request_timeout=t)
    assert created["spec"]["sharing"] == "timeslice", "schema default not applied: %r" % created["spec"]

    listed = custom.list_cluster_custom_object(group, version, plural, label_selector="team=ml",
                                               _request_timeout=t)
    assert [o["metadata"]["name"] for o in listed["items"]] == ["training"], "list %r" % listed

    # CustomObjectsApi sends merge-patch+json for a dict body.
    patched = custom.patch_cluster_custom_object(group, version, plural, "training",
                                                 {"spec": {"sharing": "mps"}}, _request_timeout=t)
    assert patched["spec"]["sharing"] == "mps", "patch gave %r" % patched["spec"]
    assert patched["spec"]["workloadClass"] == "training", "patch lost a field: %r" % patched["spec"]

    expect_status(422, "GPUPolicy with sharing outside its enum",
                  custom.patch_cluster_custom_object, group, version, plural, "training",
                  {"spec": {"sharing": "everything"}}, _request_timeout=t)

    custom.delete_cluster_custom_object(group, version, plural, "training", _request_timeout=t)
    expect_status(404, "GPUPolicy after delete", custom.get_cluster_custom_object,
                  group, version, plural, "training", _request_timeout=t)


def dynamic_scenario(api_client, discovery_cache):
    """The discovery-driven DynamicClient and utils.create_from_dict, after crd_scenario."""
    t = REQUEST_TIMEOUT_S
    # A discovery cache per server: the default file is named for the host, so a later server on
    # the same port would otherwise be described by an earlier one's discovery.
    dyn = dynamic.DynamicClient(api_client, cache_file=discovery_cache)

    policies = dyn.resources.get(api_version="fracgpu.io/v1alpha1", kind="GPUPolicy")
    assert policies.namespaced is False and policies.name == "gpupolicies", \
        "discovery of GPUPolicy: %s namespaced=%s" % (policies.name, policies.namespaced)
    created = policies.create(body={"apiVersion": "fracgpu.io/v1alpha1", "kind": "GPUPolicy",
                                    "metadata": {"name": "dynamic"}, "spec": {}}, _request_timeout=t)
    assert created.spec.sharing == "timeslice", "schema default not applied: %s" % created.spec
    patched = policies.patch(name="dynamic", body={"spec": {"isolation": "dedicated"}},
                             content_type="application/merge-patch+json", _request_timeout=t)
    assert patched.spec.isolation == "dedicated", "dynamic merge patch gave %s" % patched.spec
    policies.delete(name="dynamic", _request_timeout=t)
    assert [o.metadata.name for o in policies.get(_request_timeout=t).items] == [], "GPUPolicies left"

    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    deployment = deployments.create(namespace="default", body={
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "dyn"},
        "spec": {"selector": {"matchLabels": {"app": "dyn"}},
                 "template": {"metadata": {"labels": {"app": "dyn"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
        _request_timeout=t)
    generation = deployment.metadata.generation
    assert generation == 1, "new Deployment generation %s" % generation
    deployments.delete(name="dyn", namespace="default", _request_timeout=t)

    made = utils.create_from_dict(api_client, {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-list"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "from-list"},
         "spec": {"ports": [{"port": 80}]}}]}, namespace="default")
    kinds = [(o.kind, o.metadata.name) for o in made]
    assert kinds == [("ConfigMap", "from-list"), ("Service", "from-list")], "create_from_dict made %r" % kinds
    v1 = client.CoreV1Api(api_client)
    v1.delete_namespaced_config_map("from-list", "default", _request_timeout=t)
    v1.delete_namespaced_service("from-list", "default", _request_timeout=t)


def run_against(binary, crd_dir, workdir, tls):
    label = "TLS with a bearer token" if tls else "plain HTTP"
    server = Server(binary, workdir, tls)
    try:
        # load_kube_config sets the default Configuration, the way most programs set up the client.
        config.load_kube_config(config_file=server.kubeconfig)
        api_client = client.ApiClient()
        want_scheme = "https://" if tls else "http://"
        host = api_client.configuration.host
        assert host == want_scheme + server.address, "kubeconfig server %r for %s" % (host, server.address)
        version = client.VersionApi(api_client).get_code(_request_timeout=REQUEST_TIMEOUT_S)   # GET /version/
        assert version.major == "1" and version.git_version.startswith("v1."), "version %r" % version
        if tls:
            for token, what in ((None, "no token"), ("Bearer wrong", "a wrong token")):
                denied = client.ApiClient(client.Configuration.get_default_copy())
                denied.configuration.api_key = {"authorization": token} if token else {}
                expect_status(401, what, client.CoreV1Api(denied).list_namespace,
                              _request_timeout=REQUEST_TIMEOUT_S)
        core_scenario(api_client)
        history_scenario(api_client)
        crd_scenario(api_client, crd_dir)
        dynamic_scenario(api_client, server.kubeconfig + ".discovery.json")
    finally:
        status = server.stop()
    assert status == 0, "server exited with %s after SIGTERM" % status
    print("ok: %s" % label)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: %s SERVER_BINARY CRD_DIR" % sys.argv[0])
    binary, crd_dir = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="fg-pyclient-") as workdir:
        for tls in (True, False):
            try:
                run_against(binary, crd_dir, workdir, tls)
            except Exception:
                traceback.print_exc()
                sys.exit("FAIL (%s)" % ("TLS with a bearer token" if tls else "plain HTTP"))


if __name__ == "__main__":
    main()
