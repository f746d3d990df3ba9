#!/usr/bin/env python3
"""`make demo`: fracgpu live on a simulated cluster, in a few minutes.

Starts the simulated cluster of demo/cluster.yaml (the test API server, GPU nodes of four A100s with
real node agents and capacity holders, an autoscaler; pods' GPU use replayed from the GenTD26 serving
trace, a trace minute a second), installs fracgpu with `kubectl apply -k manifests/`, deploys the
workloads of demo/workloads.yaml asking for whole GPUs, then opts them in with `kubectl annotate` and
shows, live, GPUs in use, nodes and each workload's allocation as recommendations arrive. Ends with a
summary (GPUs and nodes before and after, GPU-hours saved, memory overflows) and an HTML report, and
stops every process it started. Throughout, fracgpu-checker (e2e/checker) judges the sharing from the
API server on its own; at the end `kubectl fracgpu gpus` must agree with it GPU by GPU, and it must
have seen no GPU over-committed, or the demo fails. The demo's policies (demo/policies.yaml) have minute-scale windows
and are labelled fracgpu.io/demo: they are not for real clusters.

usage: scripts/demo.py BUILD_DIR [--minutes N] [--report FILE]
"""
import argparse
import datetime
import html
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NS = "demo"
TIME_SCALE = 60          # trace seconds per second (demo/cluster.yaml usage.timeScale)
OPERATOR_ARGS = ["--capacity-idle-grace=10s", "--collect-interval=3s", "--rightsizing-interval=3s",
                 "--checkpoint-interval=30s", "--consolidation-interval=10s", "--rightsizing-min-replicas=1"]


class Demo:
    def __init__(self, build, minutes, report):
        self.build = os.path.abspath(build)
        self.minutes = minutes
        self.report = report
        self.dir = tempfile.mkdtemp(prefix="fracgpu-demo-")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.env = dict(os.environ, KUBECONFIG=self.kubeconfig, KUBECACHEDIR=os.path.join(self.dir, "kube-cache"),
                        PATH=os.path.join(self.build, "bin") + os.pathsep + os.environ.get("PATH", ""))
        self.sim = None
        self.checker = None
        self.checker_report = os.path.join(self.dir, "checker.json")
        self.tty = sys.stdout.isatty()
        self.samples = []        # (seconds since opt-in, GPUs, nodes, overflowing GPUs)
        self.overflows = 0

    # ---- processes ----

    def kubectl(self, *args, stdin=None, check=True):
        p = subprocess.run(["kubectl", "--request-timeout=20s", *args], env=self.env, input=stdin, text=True,
                           capture_output=True, timeout=180)
        if check and p.returncode != 0:
            raise RuntimeError("kubectl %s: %s" % (" ".join(args), (p.stderr or p.stdout).strip()))
        return p.stdout

    def get(self, *args):
        return json.loads(self.kubectl("get", *args, "-o", "json"))

    def start_cluster(self):
        self.say("starting a simulated cluster: 3 GPU nodes of 4 A100s, a system node, an autoscaler, GPU use from GenTD26")
        log = open(os.path.join(self.dir, "cluster.log"), "w")
        self.sim = subprocess.Popen(
            [os.path.join(self.build, "bin", "fracgpu-sim-cluster"), "--kubeconfig-out", self.kubeconfig,
             "--config", os.path.join(ROOT, "demo", "cluster.yaml"), "--dir", os.path.join(self.dir, "cluster"),
             "--log-level", "warn"], stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
        deadline = time.time() + 180
        while time.time() < deadline:
            line = self.sim.stdout.readline()
            if not line:
                raise RuntimeError("the simulated cluster stopped (see %s)" % log.name)
            if "ready:" in line:
                return
        raise RuntimeError("the simulated cluster was not ready in 180 s (see %s)" % log.name)

    def start_checker(self):
        """The independent sharing checker, watching every pod from now on."""
        self.checker = subprocess.Popen(
            [os.path.join(self.build, "bin", "fracgpu-checker"), "--kubeconfig", self.kubeconfig, "--report",
             self.checker_report], stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "checker.log"), "w"),
            start_new_session=True)
        self.wait("the sharing checker listing the pods", lambda: os.path.exists(self.checker_report), 60)

    def checker_view(self):
        """The checker's report, written afresh on SIGUSR1."""
        before = os.stat(self.checker_report).st_mtime_ns
        self.checker.send_signal(signal.SIGUSR1)
        self.wait("the sharing checker's report", lambda: os.stat(self.checker_report).st_mtime_ns != before, 30)
        with open(self.checker_report) as f:
            return json.load(f)

    def stop(self):
        for p in (self.checker, self.sim):
            if not p or p.poll() is not None:
                continue
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()

    def wait(self, what, cond, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if cond():
                return
            time.sleep(0.2)
        raise RuntimeError("%s: not within %d s" % (what, timeout))

    # ---- what the cluster holds ----

    def gpu_nodes(self):
        return len(self.get("nodes", "-l", "nvidia.com/gpu.present=true")["items"])

    def gpus_in_use(self, pods):
        """GPUs held by pods: whole GPUs asked for (nvidia.com/gpu), capacity pods included."""
        n = 0
        for p in pods["items"]:
            if not p["spec"].get("nodeName") or p["status"].get("phase") in ("Succeeded", "Failed"):
                continue
            for c in p["spec"].get("containers", []):
                n += int(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", "0"))
        return n

    def memory_overflows(self, pods):
        """GPUs whose memory in use is above their size, from the node agents' /metrics."""
        over = 0
        for p in pods["items"]:
            labels = p["metadata"].get("labels", {})
            if labels.get("app.kubernetes.io/component") != "node-agent" or not p["status"].get("podIP"):
                continue
            try:
                text = urllib.request.urlopen("http://%s:9402/metrics" % p["status"]["podIP"], timeout=5).read().decode()
            except OSError:
                continue
            used, total = {}, {}
            for line in text.splitlines():
                for name, into in (("fracgpu_gpu_memory_used_bytes{", used), ("fracgpu_gpu_memory_total_bytes{", total)):
                    if line.startswith(name):
                        key = line[len(name):line.index("}")]
                        into[key] = float(line.rsplit(" ", 1)[1])
            over += sum(1 for k, v in used.items() if v > total.get(k, float("inf")))
        return over

    def workloads(self):
        rows = []
        for w in self.get("gpuworkloads", "-n", NS)["items"]:
            st = w.get("status", {})
            a = st.get("allocation", {})
            rows.append({"name": st.get("target", w["metadata"]["name"]), "policy": st.get("policy", "-"),
                         "pods": st.get("pods", 0), "compute": a.get("compute", "-"), "memory": a.get("memory", "-"),
                         "recommended": st.get("recommendation", {}).get("summary", "-"),
                         "before": st.get("gpusBefore", "-"), "after": st.get("gpusAfter", "-")})
        return sorted(rows, key=lambda r: r["name"])

    # ---- the show ----

    def say(self, text):
        print(text, flush=True)

    def show(self, t, gpus, nodes, rows, phase):
        if self.tty:
            lines = ["\033[H\033[J" + "fracgpu demo — %s" % phase,
                     "%3ds (%.1f trace hours)   GPUs in use %d   GPU nodes %d   memory overflows %d" % (
                         t, t * TIME_SCALE / 3600, gpus, nodes, self.overflows), "",
                     "%-26s %-13s %5s %9s %8s %-22s %7s %6s" % ("WORKLOAD", "POLICY", "PODS", "COMPUTE", "MEMORY",
                                                               "RECOMMENDED", "BEFORE", "AFTER")]
            for r in rows:
                lines.append("%-26s %-13s %5s %9s %8s %-22s %7s %6s" % (r["name"], r["policy"], r["pods"], r["compute"],
                                                                       r["memory"], r["recommended"][:22], r["before"],
                                                                       r["after"]))
            print("\n".join(lines), flush=True)
        elif t % 10 < 3:
            alloc = ", ".join("%s %s/%s" % (r["name"].split("/")[-1], r["compute"], r["memory"]) for r in rows)
            self.say("[%3ds] GPUs %d, GPU nodes %d, overflows %d; %s" % (t, gpus, nodes, self.overflows, alloc))

    def run(self):
        self.start_cluster()
        self.start_checker()
        self.say("installing fracgpu: kubectl apply -k manifests/")
        self.kubectl("apply", "-k", os.path.join(ROOT, "manifests"))
        patch = json.dumps([{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": a}
                            for a in OPERATOR_ARGS])
        self.kubectl("patch", "deployment/fracgpu-operator", "-n", "fracgpu-system", "--type=json", "-p", patch)
        self.kubectl("patch", "daemonset/fracgpu-node-agent", "-n", "fracgpu-system", "--type=json", "-p",
                     json.dumps([{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--interval=1s"}]))
        self.kubectl("rollout", "status", "deployment/fracgpu-operator", "-n", "fracgpu-system", "--timeout=180s")
        self.kubectl("rollout", "status", "daemonset/fracgpu-node-agent", "-n", "fracgpu-system", "--timeout=180s")
        self.kubectl("apply", "-f", os.path.join(ROOT, "demo", "policies.yaml"))
        self.say("deploying 5 workloads, 12 pods, each asking for a whole GPU: kubectl apply -f demo/workloads.yaml")
        self.kubectl("apply", "-f", os.path.join(ROOT, "demo", "workloads.yaml"))

        def all_running():
            pods = self.get("pods", "-n", NS)["items"]
            return len(pods) == 12 and all(p["status"].get("phase") == "Running" for p in pods)
        self.wait("the 12 pods running", all_running, 240)
        pods = self.get("pods", "-A")
        self.before = (self.gpus_in_use(pods), self.gpu_nodes())
        self.say("before fracgpu: %d GPUs in use on %d GPU nodes" % self.before)
        self.say("opting in: kubectl annotate deployment --all -n demo fracgpu.io/automate=true")
        self.kubectl("annotate", "deployment", "--all", "-n", NS, "fracgpu.io/automate=true")
        start, settled_since, phase = time.time(), None, "measuring use (the demo policies' minHistory is 45 s)"
        last = None
        while True:
            t = int(time.time() - start)
            pods = self.get("pods", "-A")
            gpus, nodes = self.gpus_in_use(pods), self.gpu_nodes()
            over = self.memory_overflows(pods)
            self.overflows += over
            rows = self.workloads()
            self.samples.append((t, gpus, nodes, over))
            sized = rows and all(r["compute"] not in ("-", "1") and "whole" not in r["memory"] for r in rows)
            if sized:
                phase = "rightsized: packing onto fewer GPUs, letting nodes go"
            state = (gpus, nodes)   # allocations keep following use; the counts of GPUs and nodes settle
            # settled: sized, and the counts unchanged since (the clock starts once every workload is sized)
            settled_since = settled_since if (state == last and sized and settled_since) else time.time()
            last = state
            self.show(t, gpus, nodes, rows, phase)
            if (sized and time.time() - settled_since > 45) or t > self.minutes * 60:
                break
            time.sleep(2)
        self.after = (self.samples[-1][1], self.samples[-1][2])
        self.rows = rows
        self.finish(t)

    def finish(self, t):
        saved = 0.0
        for (t0, g0, _, _), (t1, _, _, _) in zip(self.samples, self.samples[1:]):
            saved += (self.before[0] - g0) * (t1 - t0)
        saved_hours = saved * TIME_SCALE / 3600
        self.say("")
        self.say("fracgpu demo: %d s (%.1f hours of the trace)" % (t, t * TIME_SCALE / 3600))
        self.say("%-22s %8s %8s" % ("", "before", "after"))
        self.say("%-22s %8d %8d" % ("GPUs in use", self.before[0], self.after[0]))
        self.say("%-22s %8d %8d" % ("GPU nodes", self.before[1], self.after[1]))
        self.say("GPU-hours saved        %.1f (trace time, while opting in and rightsizing)" % saved_hours)
        self.say("memory overflows       %d" % self.overflows)
        self.say("kubectl fracgpu gpus:")
        self.say(self.plugin("gpus").rstrip())
        self.say(self.agreement())
        self.write_report(t, saved_hours)
        self.say("report: %s" % self.report)

    def plugin(self, *args):
        p = subprocess.run(["kubectl", "fracgpu", *args], env=self.env, text=True, capture_output=True, timeout=60)
        if p.returncode != 0:
            raise RuntimeError("kubectl fracgpu %s: %s" % (" ".join(args), p.stderr.strip()))
        return p.stdout

    def agreement(self):
        """`kubectl fracgpu gpus` against the checker, GPU by GPU: the same tenants and compute on every
        GPU the checker counts tenants on, and every GPU of every GPU node listed. Allocations keep
        following use, so a comparison is made only between two identical reads of the plugin."""
        def placement():
            items = json.loads(self.plugin("gpus", "-o", "json"))["items"]
            return items, [(g["node"], g["uuid"], g["allocated"], [(t["namespace"], t["name"], t["computeMilli"])
                                                                  for t in g["tenants"]]) for g in items]
        why = "no quiet moment"
        for _ in range(5):
            first, placed = placement()
            view = self.checker_view()
            if placement()[1] != placed:
                continue
            if view["violations"]:
                raise RuntimeError("the sharing checker found %d violations, the first: %s" % (
                    view["violations"], view["messages"][0]))
            items = {(g["node"], g["uuid"]): g for g in first if g["uuid"]}   # a GPU no capacity pod holds has none
            why = None
            for g in view["gpus"]:
                mine = items.get((g["node"], g["uuid"]))
                if not mine:
                    why = "the checker's GPU %s/%s is not in kubectl fracgpu gpus" % (g["node"], g["uuid"])
                elif (len(mine["tenants"]), mine["allocated"]["computeMilli"]) != (g["tenants"], g["computeMilli"]):
                    why = "GPU %s/%s: the checker sees %d tenants and %d milli, kubectl fracgpu %d and %d" % (
                        g["node"], g["uuid"], g["tenants"], g["computeMilli"], len(mine["tenants"]),
                        mine["allocated"]["computeMilli"])
            held = sum(1 for g in first if g["tenants"])
            nodes = self.get("nodes", "-l", "nvidia.com/gpu.present=true")["items"]
            total = sum(int(n["status"]["allocatable"].get("nvidia.com/gpu", "0")) for n in nodes)
            if not why and held != len(view["gpus"]):
                why = "kubectl fracgpu lists %d GPUs with tenants, the checker %d" % (held, len(view["gpus"]))
            if not why and len(first) != total:
                why = "kubectl fracgpu lists %d GPUs, the GPU nodes have %d" % (len(first), total)
            if not why:
                return ("kubectl fracgpu gpus agrees with the independent sharing checker: %d GPUs listed, %d with "
                        "tenants, each the same; the checker judged %d pod events, 0 violations" % (
                            len(first), held, view["events"]))
        raise RuntimeError("kubectl fracgpu gpus and the sharing checker disagree: %s" % why)

    def write_report(self, t, saved_hours):
        w, h, pad = 720, 260, 40
        tmax = max(1, self.samples[-1][0])
        ymax = max(max(s[1] for s in self.samples), self.before[0], 1)

        def line(idx, color):
            pts = " ".join("%.1f,%.1f" % (pad + s[0] / tmax * (w - 2 * pad), h - pad - s[idx] / ymax * (h - 2 * pad))
                           for s in self.samples)
            return '<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (color, pts)
        ticks = "".join('<text x="%d" y="%.1f" font-size="11" text-anchor="end">%d</text>' % (
            pad - 4, h - pad - v / ymax * (h - 2 * pad) + 4, v) for v in range(0, ymax + 1, max(1, ymax // 6)))
        svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="GPUs and nodes over time">'
               '<rect width="100%%" height="100%%" fill="#fff"/>'
               '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#888"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#888"/>'
               '%s%s%s<text x="%d" y="%d" font-size="12" text-anchor="middle">seconds after opting in (%d s = %.0f trace hours)</text>'
               '<text x="%d" y="20" font-size="12" fill="#c33">GPUs in use</text><text x="%d" y="36" font-size="12" fill="#36c">GPU nodes</text>'
               '</svg>') % (w, h, pad, h - pad, w - pad, h - pad, pad, pad, pad, h - pad, ticks, line(1, "#c33"),
                            line(2, "#36c"), w // 2, h - 8, tmax, tmax * TIME_SCALE / 3600, w - 160, w - 160)
        rows = "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % html.escape(str(r[k])) for k in
                                               ("name", "policy", "pods", "compute", "memory", "recommended", "before",
                                                "after")) for r in self.rows)
        page = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>fracgpu demo</title>
<style>body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}</style>
</head><body><h1>fracgpu demo</h1>
<p>%s: %d workloads asking for whole GPUs, opted in with <code>kubectl annotate</code>, measured, rightsized
and packed by fracgpu on a simulated cluster (GPU use replayed from the GenTD26 trace, %d× faster; demo
policies with minute-scale windows).</p>
<table><tr><th></th><th>before</th><th>after</th></tr>
<tr><td>GPUs in use</td><td>%d</td><td>%d</td></tr><tr><td>GPU nodes</td><td>%d</td><td>%d</td></tr>
<tr><td>GPU-hours saved (trace time)</td><td colspan="2">%.1f</td></tr>
<tr><td>memory overflows</td><td colspan="2">%d</td></tr></table>
<h2>GPUs and nodes over time</h2>%s
<h2>Workloads</h2><table><tr><th>workload</th><th>policy</th><th>pods</th><th>compute</th><th>memory</th>
<th>recommended</th><th>GPUs before</th><th>GPUs after</th></tr>%s</table></body></html>
""" % (datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), len(self.rows), TIME_SCALE, self.before[0],
       self.after[0], self.before[1], self.after[1], saved_hours, self.overflows, svg, rows)
        with open(self.report, "w") as f:
            f.write(page)


def main():
    ap = argparse.ArgumentParser(description="fracgpu live on a simulated cluster")
    ap.add_argument("build")
    ap.add_argument("--minutes", type=float, default=5, help="stop after this long even if not settled")
    ap.add_argument("--report", default=None, help="the HTML report (default BUILD/demo-report.html)")
    a = ap.parse_args()
    report = a.report or os.path.join(os.path.abspath(a.build), "demo-report.html")
    d = Demo(a.build, a.minutes, report)
    status = 0
    try:
        d.run()
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print("demo: %s (working directory %s)" % (e, d.dir), file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        status = 130
    finally:
        d.stop()
    return status


if __name__ == "__main__":
    sys.exit(main())
