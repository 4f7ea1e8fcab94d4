"""The Dockerfile, checked by reading it: every path it copies exists and is not excluded
by .dockerignore, its base is pinned by digest, it runs as a non-root numeric user, both
entry points exist, the version is labelled, and the health check suits both. The image
built from it is checked in tests/integration/image/."""

from __future__ import annotations

import fnmatch
import re
import shlex
import tomllib
import types
from pathlib import Path

import pytest
import yaml

from .dockerfile import REPO, Instruction, healthcheck_script, instructions, parse


def _copy_sources(ins: Instruction) -> list[str]:
    words = shlex.split(ins.args)
    if any(w.startswith("--from") for w in words) or ins.heredoc is not None:
        return []
    paths = [w for w in words if not w.startswith("--")]
    return paths[:-1]


def test_every_copied_path_exists_and_reaches_the_build_context() -> None:
    ignored = [
        p.strip().rstrip("/")
        for p in (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if p.strip() and not p.startswith("#")
    ]
    sources = [s for ins in instructions() if ins.keyword == "COPY" for s in _copy_sources(ins)]
    assert {"guardian", "exporter", "pyproject.toml", "rules"} <= set(sources)
    for source in sources:
        assert (REPO / source).exists(), f"COPY {source}: no such path"
        for pattern in ignored:
            top = source.split("/")[0]
            assert not fnmatch.fnmatch(source, pattern), f"{source} excluded by {pattern}"
            assert not fnmatch.fnmatch(top, pattern), f"{source} excluded by {pattern}"


def test_the_image_carries_no_stand_in_and_no_demo() -> None:
    sources = [s for ins in instructions() if ins.keyword == "COPY" for s in _copy_sources(ins)]
    assert not [s for s in sources if s.split("/")[0] in {"testbed", "tests", "bench", "."}]
    ignored = (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert "testbed" in ignored  # not even in the build context
    for package in ("guardian", "exporter", "guardian_common"):
        stand_ins = [
            p.relative_to(REPO)
            for p in (REPO / package).rglob("*")
            if p.name in {"sim", "demo", "scenarios", "stubnvml.c", "kubeapi", "slackapi"}
        ]
        assert stand_ins == [], f"stand-ins inside the shipped {package}: {stand_ins}"


def test_runs_as_a_numeric_non_root_user() -> None:
    users = [ins.args for ins in instructions() if ins.keyword == "USER"]
    assert users, "no USER: the image would run as root"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit(), "a numeric UID, so runAsNonRoot can verify it"
    assert int(uid) > 0
    assert gid.isdigit()
    assert int(gid) > 0
    ds = yaml.safe_load((REPO / "manifests/base/controller/deployment.yaml").read_text())
    assert ds["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == int(uid)


def test_both_entry_points_are_console_scripts() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    entry = [ins for ins in instructions() if ins.keyword == "ENTRYPOINT"][-1]
    assert yaml.safe_load(entry.args) == ["guardian"]
    ds = yaml.safe_load((REPO / "manifests/base/exporter/daemonset.yaml").read_text())
    exporter = ds["spec"]["template"]["spec"]["containers"][0]["command"]
    assert {"guardian", exporter[0]} <= set(scripts)


def test_version_labels_come_from_build_args() -> None:
    all_ins = instructions()
    final = max(i for i, ins in enumerate(all_ins) if ins.keyword == "FROM")
    stage = all_ins[final:]
    args = {ins.args.split("=")[0] for ins in stage if ins.keyword == "ARG"}
    labels = " ".join(ins.args for ins in stage if ins.keyword == "LABEL")
    assert "VERSION" in args
    assert 'org.opencontainers.image.version="${VERSION}"' in labels
    assert "org.opencontainers.image.revision" in labels


def test_healthcheck_runs_the_script_the_image_writes() -> None:
    checks = [ins for ins in instructions() if ins.keyword == "HEALTHCHECK"]
    assert len(checks) == 1
    assert "/usr/local/bin/gpu-guardian-healthcheck" in checks[0].args
    assert healthcheck_script().startswith("#!/opt/gpu-guardian/bin/python\n")


def test_parser_reads_continuations_and_heredocs() -> None:
    text = "FROM x\nRUN a \\\n  b\nCOPY <<EOF /f\nline\nEOF\nUSER 1:1\n"
    parsed = [(i.keyword, i.args, i.heredoc) for i in parse(text)]
    assert parsed == [
        ("FROM", "x", None),
        ("RUN", "a  b", None),
        ("COPY", "<<EOF /f", "line\n"),
        ("USER", "1:1", None),
    ]


def _healthcheck_module() -> types.ModuleType:
    module = types.ModuleType("gpu_guardian_healthcheck")
    exec(compile(healthcheck_script(), "gpu-guardian-healthcheck", "exec"), module.__dict__)  # noqa: S102
    return module


EXPORTER = ["/opt/gpu-guardian/bin/python", "/opt/gpu-guardian/bin/guardian-exporter", "serve"]
CONTROLLER = ["/opt/gpu-guardian/bin/python", "/opt/gpu-guardian/bin/guardian"]
TLS = {"GUARDIAN_EXPORTER_PORT": "9401", "GUARDIAN_EXPORTER_TLS_CERT_FILE": "/c"}


@pytest.mark.parametrize(
    ("argv", "env", "url"),
    [
        (EXPORTER, {}, "http://127.0.0.1:9400/healthz"),
        ([*EXPORTER, "--port=9500"], {}, "http://127.0.0.1:9500/healthz"),
        (EXPORTER, TLS, "https://127.0.0.1:9401/healthz"),
        (
            [*CONTROLLER, "--log-format=json", "run"],
            {"GUARDIAN_LISTEN_ADDRESS": "0.0.0.0:9555"},
            "http://127.0.0.1:9555/healthz",
        ),
        ([*CONTROLLER, "run"], {}, "http://127.0.0.1:9469/healthz"),
        # The manifests bind the pod IP; with web.tls_cert_file the endpoint is HTTPS.
        (
            [*CONTROLLER, "run"],
            {"GUARDIAN_LISTEN_ADDRESS": "10.1.2.3:9469"},
            "http://10.1.2.3:9469/healthz",
        ),
        (
            [*CONTROLLER, "run"],
            {"GUARDIAN_LISTEN_ADDRESS": "fd00::7:9469"},
            "http://[fd00::7]:9469/healthz",
        ),
        (
            [*CONTROLLER, "run"],
            {"GUARDIAN_LISTEN_ADDRESS": "[::]:9469", "GUARDIAN_WEB__TLS_CERT_FILE": "/c"},
            "https://127.0.0.1:9469/healthz",
        ),
        ([*CONTROLLER, "--help"], {}, None),
    ],
)
def test_healthcheck_targets_the_process_it_finds(
    argv: list[str], env: dict[str, str], url: str | None
) -> None:
    assert _healthcheck_module().target(argv, env) == url


def test_healthcheck_reads_the_controller_listen_address_from_its_config(tmp_path: Path) -> None:
    config = tmp_path / "guardian.yaml"
    config.write_text("listen_address: 0.0.0.0:9470\n", encoding="utf-8")
    argv = ["python", "/x/guardian", "run", "--config", str(config)]
    assert _healthcheck_module().target(argv, {}) == "http://127.0.0.1:9470/healthz"
    config.write_text("listen_address: 0.0.0.0:9470\nweb: {tls_cert_file: c.pem}\n")
    assert _healthcheck_module().target(argv, {}) == "https://127.0.0.1:9470/healthz"


def test_the_base_is_pinned_by_digest_with_a_refresh_note() -> None:
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    base = next(ins.args for ins in instructions() if ins.keyword == "ARG")
    name, _, default = base.partition("=")
    assert name == "BASE_IMAGE"
    assert re.fullmatch(r"debian:bookworm-\d{8}-slim@sha256:[0-9a-f]{64}", default), default
    stages = {ins.args.split()[-1] for ins in instructions() if " AS " in ins.args}
    for ins in instructions():
        if ins.keyword == "FROM":
            image = ins.args.split()[0]
            assert image == "${BASE_IMAGE}" or image in stages, f"FROM {image}: not the pinned base"
    assert "imagetools inspect debian:bookworm-slim" in text  # how to refresh it


def test_make_image_stages_exactly_what_the_dockerfile_copies() -> None:
    script = (REPO / "scripts" / "build-image").read_text(encoding="utf-8")
    match = re.search(r"^CONTEXT=\(([^)]*)\)", script, re.M)
    assert match is not None
    staged = set(match.group(1).split())
    sources = {s for ins in instructions() if ins.keyword == "COPY" for s in _copy_sources(ins)}
    # The Dockerfile copies requirements/ whole: constraints.txt, and make image's wheels.
    sources = {"requirements/constraints.txt" if s == "requirements" else s for s in sources}
    sources = {s.split("/")[0] if s.startswith("image/") else s for s in sources}
    assert staged == sources
