# The single fracgpu image: every role (operator, node agent, ...) is a subcommand of /usr/local/bin/fracgpu.
# Its tag is the release, the project's VERSION in CMakeLists.txt (manifests/kustomization.yaml pins it;
# test_image_tag checks they agree):
#   docker build -t ghcr.io/fracgpu/fracgpu:0.1.0 .
# For amd64 and arm64 at once (Debian builds both natively under QEMU or on arm64 builders):
#   docker buildx build --platform linux/amd64,linux/arm64 -t ghcr.io/fracgpu/fracgpu:0.1.0 --push .

# ---- build: the fracgpu binary in release mode, without sanitizers (CI runs the tests) ----
FROM debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake pkg-config \
      libcurl4-openssl-dev libjson-c-dev libyaml-dev libssl-dev libevent-dev libcmocka-dev coinor-libclp-dev \
      libprotobuf-c-dev protobuf-c-compiler libnghttp2-dev liblzma-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DFG_SANITIZE=OFF \
 && cmake --build /build --target fracgpu -j"$(nproc)" \
 && install -m 0755 /build/bin/fracgpu /usr/local/bin/fracgpu

# ---- runtime: the shared libraries fracgpu links, CA certificates, nothing else ----
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libcurl4 libjson-c5 libyaml-0-2 libssl3 \
      libevent-2.1-7 libevent-pthreads-2.1-7 libevent-openssl-2.1-7 coinor-libclp1 liblzma5 zlib1g \
      libnghttp2-14 libprotobuf-c1 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/fracgpu /usr/local/bin/fracgpu
# GnuTLS is loaded only as a dependency of libcurl's LDAP and RTMP support, which fracgpu never uses
# (its TLS is OpenSSL's); skipping GnuTLS's initialization at load time saves about 1 MiB per process.
ENV GNUTLS_NO_IMPLICIT_INIT=1
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/fracgpu"]
CMD ["operator"]
