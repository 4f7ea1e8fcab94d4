# syntax=docker/dockerfile:1
# One image, two entry points:
#   controller: guardian run --config /etc/gpu-guardian/config.yaml
#   exporter:   guardian-exporter serve   (set `command: [guardian-exporter, serve]`)
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/gpu-guardian
COPY requirements/constraints.txt requirements/constraints.txt
COPY pyproject.toml README.md ./
COPY guardian guardian
COPY exporter exporter
# The build context has no .git, so setuptools-scm takes the version from here.
ARG VERSION=0.0.0+unknown
RUN SETUPTOOLS_SCM_PRETEND_VERSION="${VERSION}" \
    /opt/gpu-guardian/bin/pip install -c requirements/constraints.txt . \
 && /opt/gpu-guardian/bin/python -m compileall -q /opt/gpu-guardian

FROM ${PYTHON_IMAGE}
ARG VERSION=0.0.0+unknown
LABEL org.opencontainers.image.title="gpu-guardian" \
      org.opencontainers.image.description="Alerting and auto-remediation for idle GPUs in Kubernetes" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
# Only the virtual environment comes over from the builder; no compilers, no sources.
COPY --from=builder /opt/gpu-guardian /opt/gpu-guardian
COPY rules /usr/share/gpu-guardian/rules
# Bytecode is compiled at build time, so nothing is written at run time and the
# root filesystem can be mounted read-only.
ENV PATH=/opt/gpu-guardian/bin:${PATH} \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
ENTRYPOINT ["guardian"]
CMD ["--help"]
