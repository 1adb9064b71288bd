# repack-sidecar: one image for both containers of the scheduler pod (repack-sidecar `serve` and
# repack-watcher `watch`, see manifests/sidecar).
#
# Base image, pinned by digest. This repository's machines cannot pull images, so the digest is not
# recorded here yet; pin it where you build, and keep the same value for both stages:
#   docker buildx imagetools inspect python:3.11-slim --format '{{json .Manifest.Digest}}'
#   (or: crane digest python:3.11-slim; skopeo inspect docker://python:3.11-slim | jq -r .Digest)
#   docker build --build-arg PYTHON_IMAGE=python:3.11-slim@sha256:<digest> -t repack-sidecar .
# and commit the pinned value as the default below; to update it, run the same command again (Renovate/
# Dependabot can keep a `python:3.11-slim@sha256:...` default current).
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
# gcc alone (--no-install-recommends) brings no libc headers: libc6-dev is needed by every kernel.
# Python's headers come with the python image.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md ./
COPY proto ./proto
COPY ext ./ext
COPY sidecar ./sidecar
COPY scripts/build-wheel-check.sh ./scripts/
# The same steps tests/project/test_packaging.py runs: the wheel built with REPACK_REQUIRE_KERNELS=1 (a kernel
# that does not compile fails the build), its three .so checked, then installed into /opt/venv, where
# every kernel is imported and sidecar.dispatch.kernels_built() must be True.
RUN sh scripts/build-wheel-check.sh /wheels /opt/venv /src

FROM ${PYTHON_IMAGE}
RUN groupadd --gid 65532 repack \
    && useradd --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin repack
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# Two glibc malloc arenas instead of 8 per core: after concurrent Plans the worker threads' arenas
# otherwise keep hundreds of MiB that no request uses (bench/memory.py measures both).
ENV MALLOC_ARENA_MAX=2
# the copied venv works on this stage's interpreter, with the kernels
RUN python -c "from sidecar.dispatch import kernels_built; assert kernels_built(), 'kernels missing'"
USER 65532:65532
# gRPC (50151) and the extender (8008) listen on loopback only; metrics and probes: 9464 (sidecar),
# 9465 (watcher). The scheduler itself uses 8080 and 11251.
EXPOSE 9464 9465
ENTRYPOINT ["repack-sidecar", "--log-format", "json"]
# The default is the manifests' repack-sidecar container (manifests/sidecar/scheduler-sidecar-patch.yaml
# passes the same args; tests/server/test_extender_ops.py keeps them equal): extender intake on 8008, the port
# of manifests/extender/volcano-scheduler.conf's urlPrefix. The watcher container passes its own args.
CMD ["serve", "--host", "127.0.0.1", "--port", "50151", "--metrics-port", "9464", "--extender-port", "8008", \
     "--max-message-mib", "64", "--max-concurrent-rpcs", "16", "--session-ttl", "120"]
