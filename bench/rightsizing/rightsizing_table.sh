#!/usr/bin/env bash
# rightsizing_table.sh — docs/rightsizing.md's table from `fracgpu simulate --json` output.
#
#   bench/rightsizing/rightsizing_table.sh [--run BUILD] [--data DIR] OUTDIR
#
# DIR holds the GenTD26 trace as the build decompresses it from data/alibaba-genai-2026-gpu-util:
# by default BUILD/data/alibaba-genai-2026-gpu-util with --run, else
# build-bench/data/alibaba-genai-2026-gpu-util. With --run, first simulates every built-in policy on
# the whole trace and on each half of its pods (even and odd positions in hash order: the policies'
# numbers were tuned on the even half, so the odd half is held out) with BUILD/bin/fracgpu, one
# process per policy and selection, as many at once as there are cores, niced, writing
# OUTDIR/<policy>.<all|even|odd>.json. Then prints, from OUTDIR, one Markdown table: GPUs at the
# peak and on average against one GPU per pod and the hindsight packing (docs/benchmarks.md §2), and
# the costs, with the targets of docs/benchmarks.md checked on the whole trace.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
policies="real-time real-time-mps near-real-time batch training build"
selections="all even odd"

me=rightsizing_table.sh
dataset=alibaba-genai-2026-gpu-util
. "$root/bench/table_args.sh" "$@"
[ -d "$data" ] || { echo "rightsizing_table.sh: no directory $data; build first (cmake --build build-bench) or give --data DIR" >&2; exit 1; }
mkdir -p "$out"

if [ -n "$build" ]; then
  for p in $policies; do
    for s in $selections; do echo "$p $s"; done
  done | xargs -P "$(nproc)" -L1 sh -c 'half=""; [ "$5" = all ] || half="--half $5"
      nice -n 10 "$1/bin/fracgpu" simulate --usage "$2" --policy "$4" $half --json > "$3/$4.$5.json"' sh "$build" "$data" "$out"
fi

for p in $policies; do
  for s in $selections; do
    [ -r "$out/$p.$s.json" ] && { cat "$out/$p.$s.json"; echo; }
  done
done | awk -v policies="$policies" '
function field(line, key,    m) {
  if (match(line, "\"" key "\":[^,}]*")) { m = substr(line, RSTART + length(key) + 3, RLENGTH - length(key) - 3); gsub(/"/, "", m); return m }
  return ""
}
NF {
  p = field($0, "policy"); s = field($0, "selection"); have[p, s] = 1
  n = split("pods gpus_peak gpus_peak_all gpus_mean one_per_pod hindsight sum_of_peaks memory_overflow_gpu_minutes contended_gpu_minutes_pct overrun_pct overrun_compute_pct overrun_memory_pct changes_per_pod_day warmup_minutes elapsed_ms", K, " ")
  for (i = 1; i <= n; i++) v[p, s, K[i]] = field($0, K[i])
}
END {
  print "| policy | pods | warm-up | GPUs peak | GPUs mean | vs one-per-pod | vs hindsight | peak incl. warm-up | memory overflow (GPU-min) | contended % | overrun % (compute / memory) | changes/pod/day | target met |"
  print "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  np = split(policies, P, " ")
  split("all even odd", S, " ")
  for (i = 1; i <= np; i++) for (j = 1; j <= 3; j++) {
    p = P[i]; s = S[j]
    if (!have[p, s]) continue
    peak = v[p, s, "gpus_peak"] + 0
    limit = p == "batch" ? 66 : p == "real-time" ? 95 : 0
    ok = v[p, s, "memory_overflow_gpu_minutes"] == 0 && v[p, s, "contended_gpu_minutes_pct"] + 0 <= 1
    met = s != "all" ? "" : (limit ? ((ok && peak <= limit) ? "yes" : "no") " (peak ≤ " limit ")" : (ok ? "yes" : "no"))
    name = s == "all" ? p : p " (" s " half)"
    printf "| %s | %s | %dh | %d | %.1f | %d (%.0f%%) | %d (sum of peaks %d) | %s | %s | %.2f | %.2f (%.2f / %.2f) | %.2f | %s |\n", name,
      v[p, s, "pods"], v[p, s, "warmup_minutes"] / 60, peak, v[p, s, "gpus_mean"], v[p, s, "one_per_pod"],
      100 * peak / v[p, s, "one_per_pod"], v[p, s, "hindsight"], v[p, s, "sum_of_peaks"], v[p, s, "gpus_peak_all"],
      v[p, s, "memory_overflow_gpu_minutes"], v[p, s, "contended_gpu_minutes_pct"], v[p, s, "overrun_pct"],
      v[p, s, "overrun_compute_pct"], v[p, s, "overrun_memory_pct"], v[p, s, "changes_per_pod_day"], met
  }
  print ""
  print "Targets (docs/benchmarks.md §2, whole trace): batch peak ≤ 66 GPUs, real-time ≤ 95; memory overflow 0 GPU-minutes and contended GPU-minutes ≤ 1% for every policy. The halves are measured against their own one-per-pod count and hindsight packing."
}'
