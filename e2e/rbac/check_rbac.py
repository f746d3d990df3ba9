#!/usr/bin/env python3
"""test_rbac: fracgpu's RBAC grants what its code uses, and nothing else.

The manifests are rendered as `kubectl apply -k manifests/` would apply them (`kubectl kustomize`).
The end-to-end tests on the simulated cluster leave, in the audit directory, every distinct request
that fracgpu's own identities (the ServiceAccounts of fracgpu-system) made in their run, as the
test API server recorded it: user, verb, group, resource, subresource, namespace, name
(e2e/apiserver/README.md). Two checks, each failing with the requests or rules at fault:

  1. every request is allowed by the rendered Roles and ClusterRoles bound to its identity, as
     kube's RBAC authorizer decides (groups, resources with subresources, verbs, resourceNames, a
     Role only in its namespace); a request that only the test API server's missing authorization
     let through would fail on a real cluster;
  2. every verb on every resource that a rule grants was used by some request, unless UNEXERCISED
     below names it with the reason the end-to-end runs cannot show it; a grant nobody uses is a
     grant to remove.

usage: check_rbac.py --kubectl KUBECTL --manifests DIR --audit-dir DIR --expect NAME[,NAME...]
(--expect: the test programs whose audit files must be there, so that no run is silently missing).
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import yaml

SYSTEM_NS = "fracgpu-system"

# (identity, group, resource, verb): granted for code paths the end-to-end runs do not reach, each
# with where the code uses it. Keep this short: everything else must be seen used.
OPERATOR = "system:serviceaccount:fracgpu-system:fracgpu-operator"
UNEXERCISED = {
    (OPERATOR, "fracgpu.io", "gpupolicies", "update"):
        "reconcilers/policy.c upgrades a built-in policy an older release wrote (crds/test/test_builtin.c)",
    (OPERATOR, "fracgpu.io", "gpucheckpoints", "delete"):
        "reconcilers/rightsizer_write.c collects a checkpoint past its TTL, days after its workload went",
    (OPERATOR, "batch", "cronjobs", "patch"):
        "automating a CronJob labels its job template (reconcilers/test/test_workload_reconciler.c); the "
        "runs automate Deployments and StatefulSets",
    (OPERATOR, "", "secrets", "get"):
        "reconcilers/grant_key_reconciler.c reads the grant key's Secret again after losing a write to "
        "another replica (reconcilers/test/test_grant_key_reconciler.c)",
}


def render(kubectl, manifests):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, KUBECACHEDIR=cache)
        out = subprocess.run([kubectl, "kustomize", manifests], env=env, capture_output=True, text=True, check=True)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def identity(subject, default_ns):
    if subject.get("kind") != "ServiceAccount":
        return None
    return "system:serviceaccount:%s:%s" % (subject.get("namespace", default_ns), subject["name"])


def grants(docs):
    """[(identity, namespace or None for cluster-wide, rule)] from the bindings of the manifests."""
    roles = {}
    for d in docs:
        if d["kind"] in ("Role", "ClusterRole"):
            roles[(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])] = d.get("rules", [])
    out = []
    for d in docs:
        if d["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ns = d["metadata"].get("namespace") if d["kind"] == "RoleBinding" else None
        ref = d["roleRef"]
        rules = roles.get((ref["kind"], ns if ref["kind"] == "Role" else None, ref["name"]))
        if rules is None:
            sys.exit("%s %s binds %s %s, which the manifests do not hold" % (d["kind"], d["metadata"]["name"],
                                                                             ref["kind"], ref["name"]))
        for s in d.get("subjects", []):
            who = identity(s, d["metadata"].get("namespace"))
            if who:
                out.extend((who, ns, r) for r in rules)
    return out


def resource_of(req):
    return req["resource"] + ("/" + req["sub"] if req["sub"] != "-" else "")


def rule_allows(rule, req):
    group = "" if req["group"] == "-" else req["group"]
    if group not in rule.get("apiGroups", []) and "*" not in rule.get("apiGroups", []):
        return False
    if resource_of(req) not in rule.get("resources", []) and "*" not in rule.get("resources", []):
        return False
    if req["verb"] not in rule.get("verbs", []) and "*" not in rule.get("verbs", []):
        return False
    names = rule.get("resourceNames")
    return not names or req["name"] in names


def allowed(granted, req):
    return [(ns, r) for who, ns, r in granted
            if who == req["user"] and (ns is None or ns == req["ns"]) and rule_allows(r, req)]


def read_audit(audit_dir, expect):
    reqs, missing = [], []
    for name in expect:
        path = os.path.join(audit_dir, name + ".audit")
        if not os.path.exists(path):
            missing.append(path)
            continue
        for line in open(path):
            f = line.rstrip("\n").split("\t")
            if len(f) != 7:
                sys.exit("%s: not an audit line: %r" % (path, line))
            reqs.append(dict(zip(("user", "verb", "group", "resource", "sub", "ns", "name"), f)))
    if missing:
        sys.exit("no audit of the run of %s: run those tests first (ctest runs them before this one)" %
                 ", ".join(missing))
    return reqs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubectl", required=True)
    ap.add_argument("--manifests", required=True)
    ap.add_argument("--audit-dir", required=True)
    ap.add_argument("--expect", required=True)
    a = ap.parse_args()
    granted = grants(render(a.kubectl, a.manifests))
    reqs = read_audit(a.audit_dir, [n for n in a.expect.split(",") if n])

    # every (identity, group, resource, verb) a rule grants, with the names that rule limits it to
    grant_keys = {}
    for who, _, rule in granted:
        for g in rule.get("apiGroups", []):
            for res in rule.get("resources", []):
                for v in rule.get("verbs", []):
                    grant_keys.setdefault((who, g, res, v), rule.get("resourceNames"))
    refused, used = set(), set()
    for r in reqs:
        if allowed(granted, r):
            used.add((r["user"], "" if r["group"] == "-" else r["group"], resource_of(r), r["verb"]))
        else:
            refused.add("%s %s %s in %s (name %s)" % (r["user"].rsplit(":", 1)[1], r["verb"], resource_of(r), r["ns"],
                                                      r["name"]))
    idle = [k for k in grant_keys if k not in used]
    excused = sum(1 for k in idle if k in UNEXERCISED)
    unused = ["%s may %s %s%s%s, and no run did" % (who.rsplit(":", 1)[1], v, g + "/" if g else "", res,
                                                   " " + str(grant_keys[(who, g, res, v)]) if grant_keys[(who, g, res, v)] else "")
              for who, g, res, v in idle if (who, g, res, v) not in UNEXERCISED]
    identities = sorted({r["user"] for r in reqs})
    print("test_rbac: %d distinct requests by %d identities (%s) in %d runs; %d grants (identity, group, resource, verb), "
          "%d seen used, %d excused as not reachable from the runs" % (
              len(reqs), len(identities), ", ".join(i.rsplit(":", 1)[1] for i in identities),
              len(a.expect.split(",")), len(grant_keys), len(used), excused))
    for line in sorted(refused):
        print("REFUSED on a real cluster: " + line)
    for line in sorted(unused):
        print("UNUSED grant: " + line)
    return 1 if refused or unused else 0


if __name__ == "__main__":
    sys.exit(main())
