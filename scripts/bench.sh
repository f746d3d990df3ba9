#!/usr/bin/env bash
# `make bench`: runs every benchmark program of a release build and prints its figures. Those that
# replay a trace read the copy the build decompressed from data/ into BUILD/data.
set -euo pipefail
build=${1:-build-bench}
shopt -s nullglob
for b in "$build"/bench/fg_bench_*; do
  args=()
  case $(basename "$b") in
    fg_bench_sched_latency) args=("$build/data/alibaba-gpu-v2023/openb_pod_list_default.csv") ;;
  esac
  echo "== $(basename "$b")"
  "$b" "${args[@]}"
done
# The rightsizing experiment's table (docs/rightsizing.md): every built-in policy, whole trace and halves.
echo "== rightsizing_table"
tmp=$(mktemp -d)
bench/rightsizing/rightsizing_table.sh --run "$build" "$tmp"
rm -rf "$tmp"
