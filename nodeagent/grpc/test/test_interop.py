"""nodeagent/grpc against gRPC's own implementation, both ways.

The kubelet that fracgpu's device plugin talks to is Go's gRPC; the tests beside this file only show
that fracgpu's server and client agree with each other. This one puts Debian's python3-grpcio (gRPC's
C core under a Python API, written by neither this project nor Go's authors) at the other end:

1. grpcio's client calls the C server (fg_grpc_interop_peer serve): Allocate with two containers, the
   ListAndWatch stream (three updates, then its end), an unknown method (UNIMPLEMENTED), a refusal
   whose message needs percent-encoding, a request over 4 MiB (RESOURCE_EXHAUSTED), a stream grpcio
   cancels and a call whose deadline passes — for both of which the C server must report the call
   gone.
2. The C client (fg_grpc_interop_peer call) calls a grpcio server: Register, ListAndWatch, Allocate,
   a refusal, an unknown method and a slow method with a 300 ms deadline; the script checks both
   what the C client printed and what the Python server decoded from its requests.

No generated Python: grpcio runs with raw-bytes serializers and the protobuf messages are written and
read below from the published field numbers, independently of protoc-c. Every wait is bounded; the
peer is built with AddressSanitizer, so its exit status also says whether it leaked. A missing
python3-grpcio is a failure, not a skip (scripts/setup.sh installs it).

Usage: test_interop.py PEER_BINARY
"""

import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent import futures

import grpc

PEER = sys.argv[1] if len(sys.argv) > 1 else ""
REFUSAL = "grant for ml/llm-0 is 100% forged (%41 is not A): \u00fc"
HOLD = "/fracgpu.test.Interop/Hold"
NEVER = "/fracgpu.test.Interop/Never"
REFUSE = "/fracgpu.test.Interop/Refuse"

# ---- protobuf, by hand ----


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(num, data):
    return varint(num << 3 | 2) + varint(len(data)) + data


def field_str(num, text):
    return field_bytes(num, text.encode())


def field_int(num, value):
    return varint(num << 3 | 0) + varint(value)


def decode(buf):
    """{field number: [values]}: bytes for length-delimited fields, ints for varints."""
    fields, i = {}, 0
    while i < len(buf):
        key, shift = 0, 0
        while True:
            b = buf[i]
            i += 1
            key |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        num, wire = key >> 3, key & 7
        value, shift = 0, 0
        while True:
            b = buf[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if wire == 2:
            value, i = bytes(buf[i:i + value]), i + value
        elif wire != 0:
            raise ValueError("unexpected wire type %d" % wire)
        fields.setdefault(num, []).append(value)
    return fields


def text(fields, num):
    return fields.get(num, [b""])[0].decode()


def allocate_request(containers):
    # AllocateRequest{container_requests=1: ContainerAllocateRequest{devices_ids=1}}
    return b"".join(field_bytes(1, b"".join(field_str(1, d) for d in ids)) for ids in containers)


def container_envs(container):
    # ContainerAllocateResponse.envs=1: map entries {key=1, value=2}
    return {text(decode(e), 1): text(decode(e), 2) for e in decode(container).get(1, [])}


def devices_of(update):
    # ListAndWatchResponse{devices=1: Device{ID=1, health=2}}
    return [(text(decode(d), 1), text(decode(d), 2)) for d in decode(update).get(1, [])]


def device(dev_id, health, numa):
    # Device{ID=1, health=2, topology=3: TopologyInfo{nodes=1: NUMANode{ID=1}}}
    return field_str(1, dev_id) + field_str(2, health) + field_bytes(3, field_bytes(1, field_int(1, numa)))


# ---- helpers ----


def fail(step, why):
    raise AssertionError("%s: %s" % (step, why))


def check(step, cond, why):
    if not cond:
        fail(step, why)


def expect_error(step, code, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except grpc.RpcError as e:
        check(step, e.code() == code, "got %s (%s), want %s" % (e.code(), e.details(), code))
        return e.details()
    fail(step, "succeeded, want %s" % code)


class Lines:
    """The peer's stdout, line by line, read on a thread so waits can be bounded."""

    def __init__(self, stream):
        self.q = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            self.q.put(line.rstrip("\n"))
        self.q.put(None)

    def expect(self, want, seconds=5):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                line = self.q.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                break
            if line == want:
                return
            if line is None:
                fail("peer", "exited before printing %r" % want)
        fail("peer", "did not print %r within %d s" % (want, seconds))


# ---- 1: grpcio's client, the C server ----


def python_client_against_c_server(tmp):
    sock = os.path.join(tmp, "plugin.sock")
    peer = subprocess.Popen([PEER, "serve", sock], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")
    try:
        lines = Lines(peer.stdout)
        lines.expect("ready", 20)
        channel = grpc.insecure_channel("unix:" + sock)
        grpc.channel_ready_future(channel).result(timeout=10)

        allocate = channel.unary_unary("/v1beta1.DevicePlugin/Allocate")
        resp = decode(allocate(allocate_request([["GPU-a", "GPU-b"], ["GPU-c"]]), timeout=10))
        envs = [container_envs(c) for c in resp.get(1, [])]
        check("Allocate", envs == [{"FRACGPU_DEVICES": "GPU-a,GPU-b"}, {"FRACGPU_DEVICES": "GPU-c"}],
              "container responses %r" % envs)

        watch = channel.unary_stream("/v1beta1.DevicePlugin/ListAndWatch")
        updates = [devices_of(u) for u in watch(b"", timeout=10)]
        want = [[("GPU-%d" % i, "Healthy") for i in range(n)] for n in (1, 2, 3)]
        check("ListAndWatch", updates == want, "updates %r" % updates)

        details = expect_error("unknown method", grpc.StatusCode.UNIMPLEMENTED,
                               channel.unary_unary("/v1beta1.DevicePlugin/Nope"), b"", timeout=10)
        check("unknown method", "/v1beta1.DevicePlugin/Nope" in details, "details %r" % details)

        details = expect_error("refusal", grpc.StatusCode.FAILED_PRECONDITION, channel.unary_unary(REFUSE),
                               b"", timeout=10)
        check("refusal", details == REFUSAL, "details %r, want %r" % (details, REFUSAL))

        details = expect_error("oversized", grpc.StatusCode.RESOURCE_EXHAUSTED, allocate,
                               allocate_request([["g" * (5 << 20)]]), timeout=20)
        check("oversized", "exceeds the limit" in details, "details %r" % details)

        held = channel.unary_stream(HOLD)(b"", timeout=30)
        first = next(held)
        check("hold", devices_of(first) == [("GPU-0", "Healthy")], "first update %r" % devices_of(first))
        held.cancel()
        lines.expect("gone " + HOLD)

        expect_error("deadline", grpc.StatusCode.DEADLINE_EXCEEDED, channel.unary_unary(NEVER), b"", timeout=0.3)
        lines.expect("gone " + NEVER)

        # and the server still answers after all that
        resp = decode(allocate(allocate_request([["GPU-z"]]), timeout=10))
        check("Allocate after", [container_envs(c) for c in resp.get(1, [])] == [{"FRACGPU_DEVICES": "GPU-z"}],
              "%r" % resp)
        channel.close()
    finally:
        peer.stdin.close()
        try:
            rc = peer.wait(timeout=20)
        except subprocess.TimeoutExpired:
            peer.kill()
            raise
    check("peer", rc == 0, "serve exited with %d (a sanitizer report is on stderr)" % rc)


# ---- 2: the C client, grpcio's server ----


def c_client_against_python_server(tmp):
    sock = os.path.join(tmp, "kubelet.sock")
    seen = {}

    def register(request, context):
        f = decode(request)
        seen["register"] = (text(f, 1), text(f, 2), text(f, 3), decode(f.get(4, [b""])[0]))
        return b""

    def list_and_watch(request, context):
        seen["watch-request"] = request
        yield field_bytes(1, device("dev-0", "Healthy", 0))
        yield field_bytes(1, device("dev-0", "Healthy", 0)) + field_bytes(1, device("dev-1", "Unhealthy", 1))
        yield b""

    def allocate(request, context):
        out = b""
        for container in decode(request).get(1, []):
            ids = [i.decode() for i in decode(container).get(1, [])]
            entry = field_str(1, "FRACGPU_DEVICES") + field_str(2, ",".join(ids))
            out += field_bytes(1, field_bytes(1, entry) + field_bytes(5, field_str(1, "nvidia.com/gpu=" + ids[0])))
        return out

    def refuse(request, context):
        context.abort(grpc.StatusCode.FAILED_PRECONDITION, REFUSAL)

    def slow(request, context):
        time.sleep(2)
        return b""

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((
        grpc.method_handlers_generic_handler("v1beta1.Registration", {
            "Register": grpc.unary_unary_rpc_method_handler(register)}),
        grpc.method_handlers_generic_handler("v1beta1.DevicePlugin", {
            "ListAndWatch": grpc.unary_stream_rpc_method_handler(list_and_watch),
            "Allocate": grpc.unary_unary_rpc_method_handler(allocate)}),
        grpc.method_handlers_generic_handler("fracgpu.test.Interop", {
            "Refuse": grpc.unary_unary_rpc_method_handler(refuse),
            "Slow": grpc.unary_unary_rpc_method_handler(slow)}),
    ))
    server.add_insecure_port("unix:" + sock)
    server.start()
    try:
        run = subprocess.run([PEER, "call", sock], stdout=subprocess.PIPE, text=True, encoding="utf-8", timeout=60)
    finally:
        server.stop(0)
    out = dict(line.split(" ", 1) for line in run.stdout.splitlines() if " " in line)
    check("call", run.returncode == 0, "exited with %d, printed %r" % (run.returncode, run.stdout))

    check("Register", out.get("register") == "OK  response-bytes=0", "printed %r" % out.get("register"))
    check("Register request", seen.get("register") == ("v1beta1", "fracgpu.sock", "fracgpu.io/gpu-share", {2: [1]}),
          "the server decoded %r" % (seen.get("register"),))
    check("ListAndWatch", out.get("watch") == "OK  [dev-0:Healthy] [dev-0:Healthy,dev-1:Unhealthy] []",
          "printed %r" % out.get("watch"))
    check("ListAndWatch request", seen.get("watch-request") == b"", "request %r" % seen.get("watch-request"))
    check("Allocate", out.get("allocate") == "OK  FRACGPU_DEVICES=GPU-a,GPU-b", "printed %r" % out.get("allocate"))
    check("refusal", out.get("refuse") == "FAILED_PRECONDITION " + REFUSAL, "printed %r" % out.get("refuse"))
    check("unknown method", (out.get("unknown") or "").startswith("UNIMPLEMENTED"), "printed %r" % out.get("unknown"))
    # whichever keeps the 300 ms first: the C client's timer, or grpcio's server reading grpc-timeout
    check("deadline", out.get("slow") in ("DEADLINE_EXCEEDED deadline of 300 ms exceeded",
                                          "DEADLINE_EXCEEDED Deadline Exceeded"), "printed %r" % out.get("slow"))


def main():
    if not os.access(PEER, os.X_OK):
        print("usage: test_interop.py PEER_BINARY", file=sys.stderr)
        return 2
    failed = 0
    for test in (python_client_against_c_server, c_client_against_python_server):
        with tempfile.TemporaryDirectory(prefix="fg-grpc-interop-") as tmp:
            try:
                test(tmp)
                print("ok   %s" % test.__name__)
            except Exception:
                failed += 1
                print("FAIL %s" % test.__name__)
                traceback.print_exc()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
