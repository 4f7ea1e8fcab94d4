# One image, two entry points:
#   controller (default):  guardian run --config /etc/gpu-guardian/config/guardian.yaml
#   node exporter:         command: [guardian-exporter]  args: [serve, ...]
# Build with Docker:  docker build --build-arg VERSION=$(git describe --tags --always) -t gpu-guardian:dev .
# Build without a registry (podman, Debian's packages only): make image. It runs this file
# with BASE_IMAGE set to a root filesystem made by mmdebstrap, the same Debian release as
# the pinned base, and PIP_INSTALL_OPTIONS pointing pip at wheels downloaded beforehand
# (scripts/build-image); tests/integration/image/ checks that image against this file.
# Kubernetes ignores HEALTHCHECK; the manifests probe /healthz and /readyz instead.
#
# The base is Debian 12 (bookworm) slim, pinned by digest: the tag says which snapshot,
# the digest is what is pulled. Python is Debian's python3 (3.11), from Debian's archive.
# To refresh it (a newer point release or security fixes in the base):
#   docker buildx imagetools inspect debian:bookworm-slim     # the "Digest:" line
#   (or: skopeo inspect --format '{{.Digest}}' docker://docker.io/library/debian:bookworm-slim)
# then put the dated tag and that digest below. Docker's record of every digest is
# https://github.com/docker-library/repo-info/blob/master/repos/debian/remote/bookworm-slim.md
ARG BASE_IMAGE=debian:bookworm-20260918-slim@sha256:3783cc01769c7b2b1b83a5c5ad96c815348e28ed7da68e2e3687004faa906251

# Debian's Python and the CA certificates (Slack and any https Prometheus), nothing else.
FROM ${BASE_IMAGE} AS python
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 ca-certificates \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*

FROM python AS builder
# venv and pip exist only here; the image gets the virtual environment without pip.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-venv \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python3 -m venv /opt/gpu-guardian
COPY requirements requirements
COPY pyproject.toml README.md ./
COPY guardian guardian
COPY exporter exporter
COPY guardian_common guardian_common
# The build context has no .git, so setuptools-scm takes the version from here.
ARG VERSION=0.0.0+unknown
# Empty: from the package index. make image: --no-index --find-links=requirements/wheels.
ARG PIP_INSTALL_OPTIONS=""
RUN SETUPTOOLS_SCM_PRETEND_VERSION="${VERSION}" \
    /opt/gpu-guardian/bin/pip install ${PIP_INSTALL_OPTIONS} -c requirements/constraints.txt . \
 && /opt/gpu-guardian/bin/pip uninstall --yes --quiet pip setuptools \
 && /opt/gpu-guardian/bin/python -m compileall -q /opt/gpu-guardian

FROM python
ARG VERSION=0.0.0+unknown
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="gpu-guardian" \
      org.opencontainers.image.description="Alerting and auto-remediation for idle GPUs in Kubernetes: controller (guardian) and node exporter (guardian-exporter)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0"
# Only the virtual environment comes over from the builder; no compilers, no sources.
COPY --from=builder /opt/gpu-guardian /opt/gpu-guardian
# The shipped rule packs, for `guardian rules check|render|test` inside the image.
COPY rules /usr/share/gpu-guardian/rules
# Bytecode is compiled at build time, so nothing is written at run time and the
# root filesystem can be mounted read-only.
ENV PATH=/opt/gpu-guardian/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# One health check for both entry points (image/gpu-guardian-healthcheck): it reads
# PID 1's command line to tell the exporter from the controller and asks its /healthz.
COPY --chmod=0755 image/gpu-guardian-healthcheck /usr/local/bin/gpu-guardian-healthcheck
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/gpu-guardian-healthcheck"]

# Non-root by default (the manifests set the same UID). The exporter's DaemonSet
# overrides it with UID 0 and no capabilities, for the kubelet's pod-resources socket.
USER 65532:65532
ENTRYPOINT ["guardian"]
CMD ["--help"]
