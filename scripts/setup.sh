#!/usr/bin/env bash
# Installs the Debian packages fracgpu builds, tests and benchmarks with, when any is missing.
# Idempotent and quiet when everything is already there; needs root (or sudo) only to install.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libcurl4-openssl-dev   # kube client: HTTP/1.1 + TLS through OpenSSL
  libjson-c-dev          # JSON objects
  libyaml-dev            # kubeconfig and manifests
  libssl-dev             # TLS, certificates
  libevent-dev           # event loop, HTTP server, OpenSSL bufferevents
  libcmocka-dev          # unit tests
  libprotobuf-c-dev      # protobuf messages: kubectl's bodies, the kubelet's device-plugin API
  protobuf-c-compiler    # protoc-c generates their C at build time
  libnghttp2-dev         # HTTP/2 under the device plugin's gRPC (the kubelet's unix sockets)
  coinor-libclp-dev      # COIN-OR Clp: the linear program behind the scheduler's prices
  liblzma-dev zlib1g-dev # xz and gzip usage traces read by fracgpu simulate
  openssl                # certificate tooling used by e2e tests
  xz-utils               # the build decompresses the traces in data/
  prometheus             # promtool and a real Prometheus for e2e
  python3-kubernetes     # the official Python client, a second real client of the test API server
  python3-yaml           # tests that compare YAML documents
  python3-grpcio         # gRPC's own implementation, the other end of nodeagent/grpc's interop test
  clang libclang-rt-dev  # libFuzzer and its sanitizer runtimes: the fuzz targets of fuzz/
  valgrind               # one end-to-end scenario with the operator under valgrind
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
