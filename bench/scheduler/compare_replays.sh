#!/usr/bin/env bash
# compare_replays.sh — whether two fracgpu binaries place every pod of the placement experiment alike.
#
#   bench/scheduler/compare_replays.sh [-j JOBS] [-t "TRACES"] [-p "POLICIES"] [-s SEEDS]
#                                      OLD_FRACGPU NEW_FRACGPU [DATA_DIR]
#
# Runs `fracgpu replay --json` with both binaries for every placement policy × trace (default: all 8
# policies and the 17 traces of docs/benchmarks.md, "Placement quality") over seeds SEEDS (default
# 42-51), one niced process per binary, trace and policy, JOBS at a time (default: the core count).
# DATA_DIR holds openb_node_list_gpu_node.csv and openb_pod_list_<trace>.csv (default:
# build/data/alibaba-gpu-v2023 in the repository). Each output line is compared with elapsed_ms
# removed (the only figure that may differ); a run's exit status and stderr are compared too. Prints
# one line per difference and a summary. Exit status 0 when every run is identical, 1 on any
# difference, 2 on bad usage or missing data.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
traces="default cpu050 cpu100 cpu200 cpu250 gpushare40 gpushare60 gpushare80 gpushare100 multigpu20 multigpu30 multigpu40 multigpu50 gpuspec10 gpuspec20 gpuspec25 gpuspec33"
policies="random dotprod clustering packing bestfit fgd fracgpu fracgpu-offline"
seeds=42-51
jobs=$(nproc)

usage() {
  sed -n '4,5p' "$0" | sed 's/^#  *//' >&2
  exit 2
}

while getopts "j:t:p:s:" opt; do
  case $opt in
    j) jobs=$OPTARG ;;
    t) traces=$OPTARG ;;
    p) policies=$OPTARG ;;
    s) seeds=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] && [ $# -le 3 ] || usage
old=$1
new=$2
data=${3:-$here/../../build/data/alibaba-gpu-v2023}
for bin in "$old" "$new"; do
  [ -x "$bin" ] || { echo "compare_replays: $bin is not an executable" >&2; exit 2; }
done
for t in $traces; do
  [ -r "$data/openb_pod_list_$t.csv" ] || { echo "compare_replays: no $data/openb_pod_list_$t.csv" >&2; exit 2; }
done
[ -r "$data/openb_node_list_gpu_node.csv" ] || { echo "compare_replays: no $data/openb_node_list_gpu_node.csv" >&2; exit 2; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# One run: BIN LABEL TRACE POLICY → $out/LABEL.TRACE.POLICY.{json,err,rc}
run_one() {
  local f=$out/$2.$3.$4 rc=0
  nice -n 10 "$1" replay --nodes "$data/openb_node_list_gpu_node.csv" --pods "$data/openb_pod_list_$3.csv" \
    --policy "$4" --seeds "$seeds" --json >"$f.json" 2>"$f.err" || rc=$?
  echo "$rc" >"$f.rc"
}
export -f run_one
export out data seeds

for t in $traces; do
  for p in $policies; do
    printf '%s old %s %s\n%s new %s %s\n' "$old" "$t" "$p" "$new" "$t" "$p"
  done
done | xargs -P "$jobs" -L1 bash -c 'run_one "$@"' run_one

strip() {
  sed -E 's/,"elapsed_ms":[^,}]*//' "$1"
}

runs=0
differ=0
lines=0
for t in $traces; do
  for p in $policies; do
    runs=$((runs + 1))
    a=$out/old.$t.$p
    b=$out/new.$t.$p
    why=""
    if [ "$(cat "$a.rc")" != "0" ] || [ "$(cat "$b.rc")" != "0" ]; then
      why="exit status $(cat "$a.rc") against $(cat "$b.rc")"
    elif ! cmp -s "$a.err" "$b.err"; then
      why="stderr differs"
    elif ! cmp -s <(strip "$a.json") <(strip "$b.json"); then
      why="$(diff <(strip "$a.json") <(strip "$b.json") | grep -c '^>' || true) of $(wc -l <"$a.json") lines differ"
    elif [ ! -s "$a.json" ]; then
      why="no output"
    fi
    lines=$((lines + $(wc -l <"$a.json")))
    if [ -n "$why" ]; then
      differ=$((differ + 1))
      echo "DIFFERENT $t $p: $why"
    fi
  done
done
echo "compare_replays: $((runs - differ)) of $runs (trace, placement policy) runs identical, seeds $seeds," \
  "$lines output lines compared (elapsed_ms aside)"
[ "$differ" -eq 0 ]
