#!/usr/bin/env bash
# `make demo`: the most complete thing fracgpu can show today, run from a build directory.
set -euo pipefail
build=${1:-build}
"$build/bin/fracgpu" version
