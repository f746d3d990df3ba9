#!/usr/bin/env bash
# `make replay`: the placement experiment of docs/benchmarks.md on the `default` trace,
# fracgpu's policy against the six published ones (seeds DEMO_SEEDS, default 42-44; 42-51 is the
# full experiment), as a table of unallocated GPU % at 100% arrived and allocation at 130%. The trace
# is the one the build decompressed from data/ into BUILD/data.
set -euo pipefail
build=${1:-build}
seeds=${DEMO_SEEDS:-42-44}
data=$build/data/alibaba-gpu-v2023
for f in openb_node_list_gpu_node.csv openb_pod_list_default.csv; do
  [ -r "$data/$f" ] || { echo "replay: cannot read $data/$f; build first (cmake --build $build)" >&2; exit 1; }
done
"$build/bin/fracgpu" version
echo "placement on the Alibaba GPU-sharing trace 'default' (1,213 nodes, 6,212 GPUs), seeds $seeds:"
printf '%-16s %12s %12s %12s %10s\n' policy "unalloc@100" "published" "alloc@130" "ms/run"
for p in random dotprod clustering packing bestfit fgd fracgpu-offline fracgpu; do
  "$build/bin/fracgpu" replay --nodes "$data/openb_node_list_gpu_node.csv" --pods "$data/openb_pod_list_default.csv" \
    --policy "$p" --seeds "$seeds" --json | tail -n 1 |
  awk -v p="$p" '
    function field(k) { match($0, "\"" k "\":[^,}]*"); return substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0 }
    BEGIN { split("random 13.70 dotprod 9.38 clustering 8.35 packing 8.22 bestfit 7.14 fgd 4.77", a, " ")
            for (i = 1; i < 12; i += 2) pub[a[i]] = a[i + 1] }
    { printf "%-16s %12.2f %12s %12.2f %10.0f\n", p, field("unallocated_pct_at_100"), (p in pub) ? pub[p] : "-",
             field("alloc_pct_at_130"), field("elapsed_ms") }'
done
