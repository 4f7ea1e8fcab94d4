"""No credential in any output: the Prometheus, remote-write, Kubernetes and Slack
clients, and the command lines, are driven through invalid auth, 4xx, 5xx, garbage,
connection resets, refused connections and timeouts, with secrets in URLs, files and
headers, against a server that echoes every request back (see hostile.py). Log lines at
DEBUG (ours and the libraries'), exception messages with their tracebacks, and the
commands' stdout and stderr must hold none of them.

Each secret ends in a marker no message would contain otherwise, so a leak is found in
any form that keeps it (raw, percent-encoded); Basic headers are looked for encoded.
"""

from __future__ import annotations

import base64
import io
import logging
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import config as k8s_config

from guardian.adapters.kube.rest import KubeRest
from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
from guardian.adapters.remote_write import RemoteWriteClient
from guardian.adapters.slack.transport import Secret, WebApiTransport, WebhookTransport
from guardian.model.http_client import BasicAuthConfig, HttpClientConfig
from guardian.model.series import TimeSeries
from guardian_common.logs import configure_logging
from guardian_common.redact import REDACTED

from .hostile import MODES, HostileServer

URL_USER, URL_PASSWORD = "alice", "urlpass@Zq81x"  # percent-encoded in the URL
FILE_USER, FILE_PASSWORD = "bob", "filepass-Kw72y"
INLINE_USER, INLINE_PASSWORD = "carol", "inlinepass-Mm41c"
BEARER = "tokenfile-Hh55q"
HEADER_KEY = "headerkey-Pp09r"
QUERY_KEY = "queryparam-Tt88k"
KUBE_TOKEN = "kubetoken-Ll34m"  # noqa: S105 - a fake the test looks for
KUBE_USER, KUBE_PASSWORD = "dave", "kubepass-Gg23d"
SLACK_TOKEN = "xoxb-slacktoken-Vv12n"  # noqa: S105 - a fake the test looks for
WEBHOOK_SECRET = "webhooksecret-Rr67t"  # noqa: S105 - a fake the test looks for
MARKERS = ["Zq81x", "Kw72y", "Mm41c", "Hh55q", "Pp09r", "Tt88k", "Ll34m", "Gg23d", "Vv12n", "Rr67t"]
MARKERS += [
    base64.b64encode(f"{user}:{password}".encode()).decode()
    for user, password in [
        (URL_USER, URL_PASSWORD),
        (FILE_USER, FILE_PASSWORD),
        (INLINE_USER, INLINE_PASSWORD),
        (KUBE_USER, KUBE_PASSWORD),
    ]
]
USERINFO = f"{URL_USER}:{URL_PASSWORD.replace('@', '%40')}"
PYTHON = sys.executable
SCENARIO = "shared-node.yaml"


def leaks(text: str) -> list[str]:
    return [marker for marker in MARKERS if marker in text]


class Outputs:
    """Everything a user or a log shipper could see, by where it came from."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, where: str, text: str) -> None:
        self.items.append((where, text))

    def call(self, where: str, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except Exception as exc:  # every error path is the point
            self.add(where, f"{exc}\n{exc!r}\n" + "".join(traceback.format_exception(exc)))

    def assert_clean(self) -> None:
        found = [(where, leaks(text), text) for where, text in self.items if leaks(text)]
        if found:
            where, markers, text = found[0]
            at = text.find(markers[0])
            pytest.fail(
                f"{len(found)} output(s) leak a secret; first: {where}: {markers}: "
                f"...{text[max(0, at - 300) : at + 100]}..."
            )
        # Not vacuous: the server echoed credentials and they were scrubbed.
        assert any(REDACTED in text for _, text in self.items)


@pytest.fixture
def outputs() -> Iterator[Outputs]:
    """Outputs, with every log record at DEBUG through the process's real handler."""
    stream = io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    configure_logging("DEBUG", "text", stream)
    out = Outputs()
    try:
        yield out
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    out.add("logs", stream.getvalue())
    out.assert_clean()


@pytest.fixture
def server() -> Iterator[HostileServer]:
    hostile = HostileServer()
    yield hostile
    hostile.close()


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {"password": tmp_path / "password", "token": tmp_path / "token"}
    paths["password"].write_text(FILE_PASSWORD + "\n")
    paths["token"].write_text(BEARER + "\n")
    return paths


def each_mode(server: HostileServer, outputs: Outputs, what: str, fn: Callable[[], Any]) -> None:
    for mode in MODES:
        server.mode = mode
        outputs.call(f"{what} [{mode}]", fn)


def closed_port() -> int:
    hostile = HostileServer()
    hostile.close()
    return hostile.port


@pytest.mark.timeout(180)
def test_prometheus_client(server: HostileServer, outputs: Outputs, files: dict[str, Path]) -> None:
    headers = {"X-Api-Key": HEADER_KEY}
    configs = [
        HttpClientConfig(server.url("/", USERINFO), timeout=1, headers=headers),
        HttpClientConfig(
            server.url("/"),
            timeout=1,
            basic_auth=BasicAuthConfig(FILE_USER, None, files["password"]),
        ),
        HttpClientConfig(server.url("/"), timeout=1, bearer_token_file=files["token"]),
        HttpClientConfig(f"http://{USERINFO}@127.0.0.1:{closed_port()}", timeout=1),
    ]
    for n, config in enumerate(configs):
        querier = PrometheusQuerier(PrometheusAccess(config))
        outputs.add(f"prometheus {n} shown url", querier.shown_url)
        each_mode(server, outputs, f"prometheus {n} query", lambda q=querier: q.query("up", 0.0))
        each_mode(server, outputs, f"prometheus {n} names", lambda q=querier: q.metric_names())
        querier.close()


@pytest.mark.timeout(180)
def test_remote_write_client(
    server: HostileServer, outputs: Outputs, files: dict[str, Path]
) -> None:
    series = [TimeSeries({"__name__": "ALERTS", "alertname": "x"}, [(1_700_000_000_000, 1.0)])]
    configs = [
        HttpClientConfig(
            server.url(f"/api/v1/write?api_key={QUERY_KEY}", USERINFO),
            timeout=1,
            headers={"X-Api-Key": HEADER_KEY},
        ),
        HttpClientConfig(
            server.url("/api/v1/write"),
            timeout=1,
            basic_auth=BasicAuthConfig(INLINE_USER, INLINE_PASSWORD),
        ),
        HttpClientConfig(server.url("/api/v1/write"), timeout=1, bearer_token_file=files["token"]),
        HttpClientConfig(
            server.url("/api/v1/write"),
            timeout=1,
            basic_auth=BasicAuthConfig(FILE_USER, None, files["password"]),
        ),
    ]
    for n, config in enumerate(configs):
        with RemoteWriteClient(config) as client:
            outputs.add(f"remote write {n} shown url", client.shown_url)
            each_mode(server, outputs, f"remote write {n}", lambda c=client: c.write(series))


def kubeconfig(path: Path, server: str, user: dict[str, str]) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.timeout(240)
def test_kubernetes_client(server: HostileServer, outputs: Outputs, tmp_path: Path) -> None:
    users = [{"token": KUBE_TOKEN}, {"username": KUBE_USER, "password": KUBE_PASSWORD}]
    patch = {"metadata": {"annotations": {"a": "b"}}}
    for n, user in enumerate(users):
        path = kubeconfig(tmp_path / f"kubeconfig-{n}", server.url(), user)
        api_client = k8s_config.new_client_from_config(config_file=str(path))
        api_client.configuration.retries = 0  # a hang costs one timeout, not four
        rest = KubeRest(api_client, timeout=1.0)
        each_mode(server, outputs, f"kube {n} get", lambda r=rest: r.get("/api/v1/namespaces/a"))
        each_mode(
            server,
            outputs,
            f"kube {n} patch",
            lambda r=rest: r.merge_patch("/apis/apps/v1/namespaces/a/deployments/d", patch),
        )
        api_client.close()


@pytest.mark.timeout(180)
def test_slack_clients(server: HostileServer, outputs: Outputs) -> None:
    web = WebApiTransport(
        Secret(SLACK_TOKEN), base_url=server.url("/api/"), timeout=1, rate_limit_retries=0
    )
    each_mode(server, outputs, "slack post", lambda: web.post("C1", {"text": "hi"}, None))
    each_mode(server, outputs, "slack update", lambda: web.update("C1", "1.2", {"text": "x"}))
    each_mode(server, outputs, "slack find", lambda: web.find("C1", "m", 0.0, None))
    hook = WebhookTransport(
        Secret(server.url(f"/services/T000/B000/{WEBHOOK_SECRET}")),
        timeout=1,
        rate_limit_retries=0,
    )
    each_mode(server, outputs, "webhook post", lambda: hook.post("", {"text": "hi"}, None))


# ------------------------------------------------------------------ command lines

RULES = """\
groups:
  - name: g
    interval: 1s
    rules:
      - record: job:up:sum
        expr: sum(up)
      - alert: Down
        expr: job:up:sum < 1
"""


def run_cli(argv: list[str], outputs: Outputs, where: str, timeout: float = 60) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    outputs.add(f"{where} (exit {result.returncode})", result.stdout + result.stderr)


def config_file(tmp_path: Path, servers: dict[str, HostileServer], files: dict[str, Path]) -> Path:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    config = {
        "prometheus": {
            "url": servers["prometheus"].url("/", USERINFO),
            "timeout": "1s",
            "headers": {"X-Api-Key": HEADER_KEY},
        },
        "rule_files": [str(rules)],
        "evaluation_interval": "1s",
        "state_path": str(tmp_path / "state.db"),
        "listen_address": "127.0.0.1:0",
        "remote_write": {
            "url": servers["remote_write"].url(f"/api/v1/write?api_key={QUERY_KEY}", USERINFO),
            "timeout": "1s",
            "bearer_token_file": str(files["token"]),
        },
        "remediation": {
            "enabled": True,
            "kubeconfig": str(
                kubeconfig(tmp_path / "kubeconfig", servers["kube"].url(), {"token": KUBE_TOKEN})
            ),
            "api_timeout": "1s",
            "leader_election": {
                "lease_duration": "3s",
                "renew_deadline": "2s",
                "retry_period": "1s",
            },
        },
    }
    path = tmp_path / "guardian.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run_until(argv: list[str], expected: list[str], times: int = 1, deadline: float = 40) -> str:
    """Run a server command until each ``expected`` text has appeared ``times`` times in
    its output (its error paths ran), then SIGTERM it; its whole output."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True)
    reader.start()

    def seen() -> bool:
        text = "".join(lines)
        return all(text.count(e) >= times for e in expected)

    until = time.monotonic() + deadline
    while time.monotonic() < until and not seen():
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    process.wait(30)
    reader.join(10)
    process.stdout.close()
    text = "".join(lines)
    assert seen(), f"{argv[3:6]}: never logged {expected} x{times}:\n{text[-3000:]}"
    return text


def run_exporter(kube: HostileServer, tmp_path: Path) -> str:
    """The exporter's pod watch against a hostile API server, a few failures long."""
    kube.mode = "401"
    path = kubeconfig(tmp_path / "exporter-kubeconfig", kube.url(), {"token": KUBE_TOKEN})
    scenario = Path(__file__).parents[3] / "testbed" / "node" / "scenarios" / SCENARIO
    argv = [PYTHON, "-m", "testbed.node", "--log-level", "DEBUG", "serve"]
    argv += [f"--scenario={scenario}", "--port=0", "--listen-address=127.0.0.1"]
    argv += ["--kubernetes=on", f"--kubeconfig={path}", "--node-name=n1"]
    argv += [f"--pod-resources-socket={tmp_path / 'kubelet.sock'}"]
    return run_until(argv, ["pod list/watch failed"])


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_command_lines(outputs: Outputs, files: dict[str, Path], tmp_path: Path) -> None:
    servers = {name: HostileServer() for name in ("prometheus", "remote_write", "kube")}
    try:
        guardian = [PYTHON, "-m", "guardian", "--log-level", "DEBUG"]
        rules = tmp_path / "check.yaml"
        rules.write_text(RULES)
        for mode in ("401", "500", "garbage", "reset"):
            servers["prometheus"].mode = mode
            url = servers["prometheus"].url("/", USERINFO)
            argv = [*guardian, "rules", "check", "--prometheus-url", url, str(rules)]
            run_cli(argv, outputs, f"rules check [{mode}]")
        bad = tmp_path / "bad.yaml"
        bad.write_text(f"prometheus: {{url: 'ftp://{USERINFO}@h/'}}\nrule_files: [{rules}]\n")
        run_cli([*guardian, "eval", "--config", str(bad)], outputs, "eval with a bad url")
        config = config_file(tmp_path, servers, files)
        for mode in ("401", "hang"):
            servers["prometheus"].mode = mode
            run_cli([*guardian, "eval", "--config", str(config)], outputs, f"eval [{mode}]")
        # A refusal at start ends `guardian run` at once, in one line.
        servers["kube"].mode = "403"
        run_cli([*guardian, "run", "--config", str(config)], outputs, "run refused at start")
        # Past the start-up check, into the evaluation and leader-election failures.
        servers["kube"].friendly["GET /api/v1/namespaces/"] = {
            "kind": "Namespace",
            "apiVersion": "v1",
            "metadata": {"name": "gpu-guardian"},
        }
        for modes in (("500", "401", "403"), ("reset", "429", "hang"), ("garbage", "503", "400")):
            for server, mode in zip(servers.values(), modes, strict=True):
                server.mode = mode
            # Evaluations and leader election both fail (twice: a retry path too).
            expected = ["rule Down in group g failed", "leader election:"]
            text = run_until([*guardian, "run", "--config", str(config)], expected, times=2)
            outputs.add(f"guardian run {modes}", text)
        outputs.add("exporter", run_exporter(servers["kube"], tmp_path))
    finally:
        for server in servers.values():
            server.close()
