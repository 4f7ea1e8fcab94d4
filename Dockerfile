# syntax=docker/dockerfile:1.7
# One image, two entry points:
#   controller (default):  guardian run --config /etc/gpu-guardian/config/guardian.yaml
#   node exporter:         command: [guardian-exporter]  args: [serve, ...]
# Build:  docker build --build-arg VERSION=$(git describe --tags --always) -t gpu-guardian:dev .
# Kubernetes ignores HEALTHCHECK; the manifests probe /healthz and /readyz instead.
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
COPY guardian_common guardian_common
# The build context has no .git, so setuptools-scm takes the version from here.
ARG VERSION=0.0.0+unknown
RUN SETUPTOOLS_SCM_PRETEND_VERSION="${VERSION}" \
    /opt/gpu-guardian/bin/pip install -c requirements/constraints.txt . \
 && /opt/gpu-guardian/bin/python -m compileall -q /opt/gpu-guardian

FROM ${PYTHON_IMAGE}
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
ENV PATH=/opt/gpu-guardian/bin:${PATH} \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# One health check for both entry points: it reads PID 1's command line to tell the
# exporter (port from --port / GUARDIAN_EXPORTER_PORT, default 9400) from the controller
# (listen_address from its --config / GUARDIAN_CONFIG file, or GUARDIAN_LISTEN_ADDRESS)
# and asks that process's /healthz. Any other command (e.g. --help) is healthy.
COPY --chmod=0755 <<'EOF' /usr/local/bin/gpu-guardian-healthcheck
#!/opt/gpu-guardian/bin/python
"""Docker HEALTHCHECK: GET /healthz of the gpu-guardian process that is PID 1."""
import os
import ssl
import sys
import urllib.request

import yaml


def flag(argv, name):
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def target(argv, env):
    names = [os.path.basename(a) for a in argv[:2]]
    if "guardian-exporter" in names or "exporter" in argv[:3]:
        port = flag(argv, "--port") or env.get("GUARDIAN_EXPORTER_PORT") or "9400"
        tls = flag(argv, "--tls-cert-file") or env.get("GUARDIAN_EXPORTER_TLS_CERT_FILE")
        return ("https" if tls else "http") + f"://127.0.0.1:{port}/healthz"
    if "run" in argv:
        address = env.get("GUARDIAN_LISTEN_ADDRESS")
        tls = env.get("GUARDIAN_WEB__TLS_CERT_FILE")
        config = flag(argv, "--config") or env.get("GUARDIAN_CONFIG")
        if config and (address is None or tls is None):
            with open(config, encoding="utf-8") as f:
                data = yaml.safe_load(f) or {}
            address = address or data.get("listen_address")
            tls = tls or (data.get("web") or {}).get("tls_cert_file")
        host, _, port = (address or "127.0.0.1:9469").rpartition(":")
        host = host.strip("[]")
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return ("https" if tls else "http") + f"://{host}:{port}/healthz"
    return None


def main(argv):
    cmdline = argv[1] if len(argv) > 1 else "/proc/1/cmdline"
    with open(cmdline, "rb") as f:
        args = [a.decode() for a in f.read().split(b"\0") if a]
    url = target(args, os.environ)
    if url is None:
        return 0
    context = ssl._create_unverified_context()  # loopback to ourselves; the cert names the pod
    try:
        with urllib.request.urlopen(url, timeout=4, context=context) as response:
            return 0 if response.status == 200 else 1
    except OSError as exc:
        print(f"{url}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
EOF
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/gpu-guardian-healthcheck"]

# Non-root by default (the manifests set the same UID). The exporter's DaemonSet
# overrides it with UID 0 and no capabilities, for the kubelet's pod-resources socket.
USER 65532:65532
ENTRYPOINT ["guardian"]
CMD ["--help"]
