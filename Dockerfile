# The container image the usual way: `docker build -t sluice:0.1.0 .` (or `podman build`). The same
# image as `bash scripts/package.sh` writes to dist/ (docs/packaging.md): the build stage runs the
# same root-filesystem script, and the final stage is that root alone, FROM scratch: the binary, the
# libraries it links, CA certificates, a non-root user; no shell, no package manager.
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN bash scripts/install-deps.sh --build
COPY . .
RUN cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_WERROR=ON -DSLUICE_TESTS=OFF \
      -DSLUICE_BENCH=OFF \
 && cmake --build build-release --target sluice \
 && bash packaging/rootfs.sh build-release/sluice /rootfs

FROM scratch
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE=unknown
COPY --from=build /rootfs/ /
USER 65532:65532
WORKDIR /
EXPOSE 8080/tcp
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
STOPSIGNAL SIGTERM
LABEL org.opencontainers.image.title="sluice" \
      org.opencontainers.image.description="OpenAI-compatible streaming gateway in bounded memory" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.source="$SOURCE"
ENTRYPOINT ["/usr/bin/sluice", "serve", "--listen", "0.0.0.0:8080"]
