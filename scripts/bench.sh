#!/usr/bin/env bash
# `make bench`: runs every benchmark program of a release build and prints its figures.
set -euo pipefail
build=${1:-build-bench}
shopt -s nullglob
for b in "$build"/bench/fg_bench_*; do
  echo "== $(basename "$b")"
  "$b"
done
