"""`guardian alertmanager-config` with real receivers against Debian's Alertmanager 0.25
and `amtool`: every combination of receiver flags passes `amtool check-config`, the
worked example of docs/alertmanager.md runs as written, and a real Alertmanager loaded
with a generated config delivers to local Slack, PagerDuty and webhook stand-ins as
routed, reading the secrets from their files."""

from __future__ import annotations

import itertools
import json
import re
import shlex
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.adapters.alertmanager import AlertmanagerClient, encode_alerts
from guardian.cli import main
from guardian.model.alertmanager_api import PostableAlert
from guardian.model.http_client import HttpClientConfig
from guardian.model.labels import LabelSet
from testbed.alertmanager_server import check_config
from tests.plugins.alertmanager_fixture import AlertmanagerFactory

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs/alertmanager.md"
PACK = sorted(str(p) for p in (ROOT / "rules/guardian").glob("*.yaml"))
DOC_SECRETS = "/etc/alertmanager/secrets/"


def generate(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["alertmanager-config", *argv]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def secrets(tmp_path: Path) -> Path:
    folder = tmp_path / "secrets"
    folder.mkdir()
    (folder / "slack-api-url").write_text("https://hooks.slack.com/services/T/B/x\n")
    (folder / "pagerduty-routing-key").write_text("0123456789abcdef0123456789abcdef\n")
    (folder / "webhook-token").write_text("token-1\n")
    return folder


def _flag_sets(folder: Path) -> dict[str, list[list[str]]]:
    return {
        "slack": [
            [],
            ["--slack-channel", "#gpu", "--slack-api-url-file", f"{folder}/slack-api-url"],
        ],
        "pagerduty": [[], ["--pagerduty-routing-key-file", f"{folder}/pagerduty-routing-key"]],
        "webhook": [
            [],
            ["--webhook-url", "https://hooks.example.com/gpu"],
            [
                "--webhook-url",
                "https://hooks.example.com/gpu",
                "--webhook-credentials-file",
                f"{folder}/webhook-token",
            ],
        ],
    }


@pytest.mark.parametrize("pack", ["guardian", "dcgm"])
def test_every_combination_of_receiver_flags_passes_amtool_check_config(
    pack: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = secrets(tmp_path)
    files = sorted(str(p) for p in (ROOT / "rules" / pack).glob("*.yaml"))
    sets = _flag_sets(folder)
    combinations = [
        [*slack, *pager, *hook]
        for slack, pager, hook in itertools.product(*sets.values())
        if slack or pager or hook
    ]
    combinations.append(  # with pages chosen, and a prefix
        [
            *sets["pagerduty"][1],
            "--page-on",
            "pipeline",
            "--page-on",
            "reclaimable/warning",
            "--receiver-prefix",
            "team",
            *sets["slack"][1],
        ]
    )
    assert len(combinations) == 12
    for i, flags in enumerate(combinations):
        path = tmp_path / f"alertmanager-{i}.yml"
        path.write_text(generate([*flags, *files], capsys), encoding="utf-8")
        report = check_config(path)
        assert "SUCCESS" in report, (flags, report)
        assert "4 inhibit rules" in report
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert f"{len(doc['receivers'])} receivers" in report


def _example_block(marker: str, language: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(
        rf"<!-- example: {re.escape(marker)} -->\n```{language}\n(.*?)\n```", text, re.DOTALL
    )
    assert found, f"docs/alertmanager.md has no {marker} example"
    return found.group(1)


def _doc_commands() -> list[list[str]]:
    joined = _example_block("alertmanager-config-receivers", "sh").replace("\\\n", " ")
    return [shlex.split(line) for line in joined.splitlines() if line.strip()]


def _local_argv(words: list[str], folder: Path) -> tuple[list[str], str]:
    """The guardian command's arguments with the secrets in ``folder`` and the rule globs
    expanded from the repository root, and the file its output is redirected to."""
    assert words[:2] == ["guardian", "alertmanager-config"]
    assert words[-2] == ">"
    argv = []
    for word in words[2:-2]:
        word = word.replace(DOC_SECRETS, f"{folder}/")
        argv.extend(sorted(str(p) for p in ROOT.glob(word)) if "*" in word else [word])
    return argv, words[-1]


def test_the_documented_example_runs_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = secrets(tmp_path)
    (generate_words, check_words) = _doc_commands()
    argv, output = _local_argv(generate_words, folder)
    text = generate(argv, capsys)
    (tmp_path / output).write_text(text, encoding="utf-8")
    assert check_words == ["amtool", "check-config", output]
    result = subprocess.run(check_words, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "SUCCESS" in result.stdout
    assert "12 receivers" in result.stdout  # "Among its twelve receivers"

    # The receivers the doc shows are those generated, the secrets' folder aside.
    generated = yaml.safe_load(text.replace(f"{folder}/", DOC_SECRETS))
    by_name = {r["name"]: r for r in generated["receivers"]}
    shown = yaml.safe_load(_example_block("alertmanager-config-receivers-output", "yaml"))
    assert shown == [by_name[r["name"]] for r in shown]
    assert len(by_name) == 12


@dataclass
class Capture:
    """A loopback HTTP server standing in for Slack, PagerDuty and a webhook: it records
    each request's path, Authorization header and JSON body."""

    server: ThreadingHTTPServer
    requests: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def on(self, path: str) -> list[tuple[str, dict[str, Any]]]:
        return [(auth, body) for p, auth, body in list(self.requests) if p == path]


@pytest.fixture
def capture() -> Iterator[Capture]:
    seen: list[tuple[str, str, dict[str, Any]]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            seen.append((self.path, self.headers.get("Authorization", ""), json.loads(body)))
            status = 202 if self.path == "/pagerduty" else 200
            reply = b'{"status":"success"}' if self.path == "/pagerduty" else b"ok"
            self.send_response(status)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Capture(server, seen)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _quick(text: str, capture: Capture) -> str:
    """The generated config, grouping without waiting, with PagerDuty's events URL on the
    stand-in (the one field a real deployment leaves at its default)."""
    doc = yaml.safe_load(text)
    doc["route"].update({"group_wait": "0s", "group_interval": "1s", "repeat_interval": "1h"})
    for receiver in doc["receivers"]:
        for config in receiver.get("pagerduty_configs", []):
            config["url"] = f"{capture.url}/pagerduty"
    return yaml.safe_dump(doc, sort_keys=False)


def _alert(name: str, cls: str, severity: str, cluster: str) -> PostableAlert:
    now = time.time()
    labels = {"alertname": name, "guardian_class": cls, "severity": severity, "cluster": cluster}
    return PostableAlert(LabelSet(labels), LabelSet(), now - 60, now + 600, "http://g/graph")


def _wait(check: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not delivered in time"
        time.sleep(0.2)


def test_a_real_alertmanager_delivers_as_routed(
    alertmanager: AlertmanagerFactory,
    capture: Capture,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = secrets(tmp_path)
    (folder / "slack-api-url").write_text(f"{capture.url}/slack\n")
    argv = [
        *("--slack-channel", "#gpu-alerts"),
        *("--slack-api-url-file", f"{folder}/slack-api-url"),
        *("--pagerduty-routing-key-file", f"{folder}/pagerduty-routing-key"),
        *("--webhook-url", f"{capture.url}/webhook"),
        *("--webhook-credentials-file", f"{folder}/webhook-token"),
        *PACK,
    ]
    am = alertmanager(config=_quick(generate(argv, capsys), capture))
    api = AlertmanagerClient(HttpClientConfig(am.url, timeout=5))
    # Another cluster's waste alert: the pipeline alert (no node) holds only its own.
    api.post_alerts(
        encode_alerts(
            [
                _alert("PrometheusRemoteWriteBehind", "pipeline", "critical", "c1"),
                _alert("GpuIdle", "reclaimable", "warning", "c2"),
            ]
        )
    )
    api.close()

    def receivers(path: str) -> set[str]:
        return {body.get("receiver", "") for _, body in capture.on(path)}

    expected = {"gpu-guardian-pipeline-critical", "gpu-guardian-reclaimable-warning"}
    _wait(lambda: receivers("/webhook") == expected and len(capture.on("/slack")) >= 2)
    _wait(lambda: len(capture.on("/pagerduty")) >= 1)
    time.sleep(1.5)  # a stray page would come within a group interval

    pages = capture.on("/pagerduty")
    assert len(pages) == 1, pages
    page = pages[0][1]
    assert page["routing_key"] == "0123456789abcdef0123456789abcdef"  # read, trimmed
    assert page["event_action"] == "trigger"
    assert page["payload"]["severity"] == "critical"
    assert "PrometheusRemoteWriteBehind" in page["payload"]["summary"]

    assert {auth for auth, _ in capture.on("/webhook")} == {"Bearer token-1"}
    slack = [body for _, body in capture.on("/slack")]
    assert {body["channel"] for body in slack} == {"#gpu-alerts"}
    titles = " ".join(a["title"] for body in slack for a in body["attachments"])
    assert "PrometheusRemoteWriteBehind" in titles
    assert "GpuIdle" in titles
