"""The `guardian-exporter` command line. It only parses arguments and hands off to the app layer."""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from exporter.app.attribute import attribute
from exporter.app.serve import Exporter, SourcesFactory, nvml_sources, run
from exporter.app.settings import SOURCES, settings_from
from exporter.model.errors import ConfigError
from guardian_common.logs import add_logging_arguments, configure_logging

EXIT_USAGE = 2
EXIT_CONFIG = 2

# Durations stay text here: the settings parse them (15s, 1m30s or seconds) for flags and
# GUARDIAN_EXPORTER_* variables alike, and their errors name the flag or the variable.
_SERVE_FLAGS: tuple[tuple[str, type, str], ...] = (
    ("backend", str, "GPU backend: nvml, the only one (default: nvml)"),
    ("listen_address", str, "address to listen on (default: 0.0.0.0; [::] style for IPv6)"),
    ("port", int, "port to listen on (default: 9400; 0 picks a free one)"),
    ("interval", str, "time between collections, e.g. 15s, 1m30s or 5 (seconds) (default: 5s)"),
    ("collect_timeout", str, "time before serving stale data, e.g. 10s (default: the interval)"),
    ("proc_root", Path, "the host's /proc (default: /proc)"),
    ("node_name", str, "the Kubernetes node name (default: $NODE_NAME, else the hostname)"),
    ("vgpu_config", Path, "vGPU ratio file: default, per-model and per-UUID ratios"),
    ("vgpu_ratio", float, "global vGPU ratio when there is no file (default: 1)"),
    ("tls_cert_file", Path, "serve HTTPS with this certificate (needs --tls-key-file)"),
    ("tls_key_file", Path, "the certificate's private key"),
    ("basic_auth_users_file", Path, "YAML file of basic_auth_users: {user: bcrypt hash}"),
    ("max_requests", int, "concurrent /metrics requests before answering 503 (default: 10)"),
    ("auth_failures_per_minute", int, "failed logins a client may make a minute (default: 10)"),
    ("listen_backlog", int, "connections queued before they are accepted (default: 1024)"),
    ("nvml_backoff_max", str, "longest wait between NVML re-initialisations (default: 1m)"),
    ("kubernetes", str, "pod names and labels from the API: auto, on or off (default: auto)"),
    ("kubeconfig", Path, "kubeconfig file (default: the pod's service account)"),
    ("pod_resources_socket", Path, "kubelet pod-resources socket (default: the kubelet's)"),
    ("group_label", str, "pod label key whose value is gpu_group (default: gpu-guardian.io/group)"),
    ("group_label_allowlist", str, "regex of raw pod label keys to export (default: group)"),
    ("cluster_name", str, "adds a cluster label to every series"),
    ("default_group", str, "gpu_group of pods without the group label (default: unassigned)"),
    ("extra_gpu_resources", str, "extra GPU resource names, comma-separated"),
    ("kube_timeout", str, "time any Kubernetes or kubelet call may take (default: 10s)"),
    ("activity_floor", float, "utilization ratio above which a GPU is active (default: 0.05)"),
    ("memory_peak_window", str, "window of the GPU memory peak series (default: 1h)"),
    ("activity_peak_window", str, "window of the GPU utilization peak series (default: 30m)"),
    ("mig_memory_floor_mib", int, "MiB a MIG device holds that count as a process (default: 64)"),
)  # fmt: skip


def _version() -> str:
    try:
        return metadata.version("gpu-guardian")
    except metadata.PackageNotFoundError:
        return "unknown"


def build_parser(prog: str = "guardian-exporter") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="GPU Guardian node exporter: per-GPU and per-pod GPU metrics for Prometheus.",
    )
    add_logging_arguments(parser, _version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve_cmd = sub.add_parser(
        "serve",
        help="collect GPU metrics and serve them on /metrics",
        description="Collect GPU metrics and serve them on /metrics. Every flag can also be "
        "set through the environment variable named after it.",
    )
    for name, kind, help_text in _SERVE_FLAGS:
        flag, var = SOURCES[name]
        serve_cmd.add_argument(
            flag, dest=name, type=kind, default=None, help=f"{help_text} [{var}]"
        )
    attr_cmd = sub.add_parser(
        "attribute",
        help="print the PID to pod attribution of a /proc tree as JSON (debugging)",
        description="Print one JSON list: {pid, pod_uid, container_id} per numeric directory.",
    )
    attr_cmd.add_argument("--proc-root", type=Path, default=Path("/proc"), help="(default: /proc)")
    attr_cmd.add_argument("--pid", type=int, default=None, help="only this PID")
    return parser


def _serve(args: argparse.Namespace, sources: SourcesFactory) -> int:
    flags: dict[str, Any] = {name: getattr(args, name) for name, _, _ in _SERVE_FLAGS}
    try:
        settings = settings_from(flags, os.environ, socket.gethostname())
        # Building validates every file before anything starts.
        exporter = Exporter(settings, os.environ, sources)
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        return run(exporter, stop)
    except ConfigError as exc:  # one line per finding, control characters escaped
        for line in str(exc).splitlines():
            print(f"guardian-exporter: configuration error: {line}", file=sys.stderr)
        return EXIT_CONFIG
    except OSError as exc:  # e.g. the port is taken, or the TLS files cannot be read
        print(f"guardian-exporter: {exc}", file=sys.stderr)
        return 1


def _attribute(args: argparse.Namespace) -> int:
    if not args.proc_root.is_dir():
        print(f"guardian-exporter: {args.proc_root} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    try:
        result = attribute(args.proc_root, args.pid)
    except OSError as exc:
        print(f"guardian-exporter: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


def main(
    argv: Sequence[str] | None = None,
    *,
    parser: argparse.ArgumentParser | None = None,
    sources: SourcesFactory = nvml_sources,
) -> int:
    """Run one command. A test bed passes its own parser (extra flags) and node sources."""
    parser = parser or build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    configure_logging(args.log_level or "INFO", args.log_format)
    if args.command == "serve":
        return _serve(args, sources)
    return _attribute(args)
