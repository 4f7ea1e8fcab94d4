"""Every other kind of file either program reads, fed hostile files through its CLI:
secrets (bearer tokens, passwords), certificates and keys, kubeconfigs (and the files a
kubeconfig names), the state database.

As test_loaders.py: each case must exit 2 with one line naming the file and the problem,
within the runner's limits (2 s of CPU, 100 MiB more memory than the CLI starts with,
no blocking on a FIFO). Before the bounded reader covered these files, a FIFO blocked
``guardian run`` forever, ``/dev/zero`` as a token took 3 GB in 2.5 s, and a 3,000-deep
kubeconfig ended in a RecursionError.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from guardian_common.files import CERTIFICATE, KUBECONFIG, SECRET
from tests.hostile.harness import Run
from tests.hostile.inputs import (
    Hostile,
    a_directory,
    billion_laughs,
    binary,
    dev_zero,
    fifo,
    larger_than,
    nested_block,
    nested_flow,
    non_utf8,
    sparse_huge,
)

ROOT = Path(__file__).resolve().parents[2]
GOOD_SCENARIO = str(ROOT / "testbed/node/scenarios/shared-node.yaml")
SERVE = ["serve", "--port", "0", "--scenario", GOOD_SCENARIO]
RUN = ("--log-level", "WARNING", "run", "--config", "{config}")

NOT_REGULAR = [
    Hostile("fifo", fifo, "not a regular file (a FIFO)"),
    Hostile("dev-zero", dev_zero, "not a regular file (a character device)"),
    Hostile("directory", a_directory, "not a regular file (a directory)"),
]
SECRETS = [
    *NOT_REGULAR,
    Hostile("sparse-8GiB", sparse_huge, "too large (8589934592 bytes, the limit is 65536"),
    Hostile("200KiB", larger_than(200 << 10), "too large"),
    Hostile("just-over-64KiB", larger_than(SECRET.max_bytes), "the limit is 65536 bytes"),
    Hostile("non-utf8", non_utf8, "is not UTF-8 text"),
]
CERTIFICATES = [
    *NOT_REGULAR,
    Hostile("sparse-8GiB", sparse_huge, "too large"),
    Hostile("just-over-1MiB", larger_than(CERTIFICATE.max_bytes), "the limit is 1048576 bytes"),
]
KUBECONFIGS = [
    *NOT_REGULAR,
    Hostile("sparse-8GiB", sparse_huge, "too large"),
    Hostile("just-over-4MiB", larger_than(KUBECONFIG.max_bytes), "the limit is 4194304 bytes"),
    Hostile("non-utf8", non_utf8, "not UTF-8 text: byte 0xe9"),
    Hostile("binary", binary, "binary data"),
    Hostile("nested-3000-flow", nested_flow, "nest"),
    Hostile("nested-3000-block", nested_block, "nested deeper than 100 levels"),
    Hostile("billion-laughs", billion_laughs, "more than 50000 nodes"),
]
STATE = [
    *NOT_REGULAR,
    Hostile("binary", binary, "file is not a database"),
    Hostile("sparse-8GiB", sparse_huge, "file is not a database"),
]


def _names_a_key(name: str) -> Hostile:
    """A valid kubeconfig whose user's client-key is the hostile file (named 'key')."""

    def make(directory: Path) -> Path:
        fifo(directory).rename(directory / "key")
        path = directory / "input.yaml"
        path.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443'}}]\n"
            "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
            "users: [{name: u, user: {client-certificate: key, client-key: key}}]\n",
            encoding="utf-8",
        )
        return path

    return Hostile(name, make, "users[0].user.client-certificate")


@dataclass(frozen=True)
class Reader:
    name: str
    program: str
    argv: tuple[str, ...]  # {} is the hostile file, {config} the config below
    cases: list[Hostile]
    config: str = ""  # the controller config; {} is the hostile file

    def command(self, path: Path, config: Path) -> list[str]:
        subst = {"{}": str(path), "{config}": str(config)}
        return [subst.get(arg, arg) for arg in self.argv]


CONFIG_HEAD = (
    "prometheus: {{url: 'http://127.0.0.1:9'{prometheus}}}\n"
    "rule_files: [rules.yaml]\n"
    "state_path: ':memory:'\n"
    "listen_address: 127.0.0.1:0\n"
)


def controller(extra: str, prometheus: str = "") -> str:
    return CONFIG_HEAD.format(prometheus=prometheus) + extra


READERS = [
    Reader("web token", "guardian", RUN, SECRETS, controller("web: {bearer_token_file: '{}'}\n")),
    Reader(
        "prometheus token",
        "guardian",
        RUN,
        SECRETS,
        controller("", prometheus=", bearer_token_file: '{}'"),
    ),
    Reader(
        "password file",
        "guardian",
        RUN,
        SECRETS,
        controller(
            "remote_write: {url: 'http://127.0.0.1:9/w', "
            "basic_auth: {username: u, password_file: '{}'}}\n"
        ),
    ),
    Reader(
        "slack token",
        "guardian",
        RUN,
        SECRETS,
        controller("slack: {token_file: '{}', routing: {default_channel: C0ALERTS}}\n"),
    ),
    Reader(
        "web certificate",
        "guardian",
        RUN,
        CERTIFICATES,
        controller("web: {tls_cert_file: '{}', tls_key_file: '{}'}\n"),
    ),
    Reader(
        "prometheus CA",
        "guardian",
        RUN,
        CERTIFICATES,
        controller("", prometheus=", tls: {ca_file: '{}'}"),
    ),
    Reader(
        "client CA",
        "guardian",
        RUN,
        CERTIFICATES,
        controller("remote_write: {url: 'https://127.0.0.1:9/w', tls: {ca_file: '{}'}}\n"),
    ),
    Reader(
        "controller kubeconfig",
        "guardian",
        RUN,
        KUBECONFIGS,
        controller("remediation: {enabled: true, kubeconfig: '{}'}\n"),
    ),
    Reader(
        "restore kubeconfig",
        "guardian",
        ("restore", "ml/Deployment/train", "--kubeconfig", "{}"),
        [*KUBECONFIGS, _names_a_key("names-a-fifo")],
    ),
    Reader("state database", "guardian", ("status", "--state", "{}"), STATE),
    Reader(
        "exporter kubeconfig",
        "node",
        (*SERVE, "--kubernetes", "on", "--kubeconfig", "{}"),
        [*KUBECONFIGS, _names_a_key("names-a-fifo")],
    ),
    Reader(
        "exporter certificate",
        "node",
        (*SERVE, "--kubernetes", "off", "--tls-cert-file", "{}", "--tls-key-file", "{}"),
        CERTIFICATES,
    ),
]

CASES = [
    pytest.param(reader, hostile, id=f"{reader.name}-{hostile.name}")
    for reader in READERS
    for hostile in reader.cases
]


@pytest.mark.parametrize(("reader", "hostile"), CASES)
def test_hostile_file_exits_2_with_one_line(
    reader: Reader, hostile: Hostile, run_cli: Run, tmp_path: Path
) -> None:
    (tmp_path / "in").mkdir()
    path = hostile.make(tmp_path / "in")
    config = tmp_path / "guardian.yaml"
    config.write_text(reader.config.replace("{}", str(path)), encoding="utf-8")
    (tmp_path / "rules.yaml").write_text("groups: []\n", encoding="utf-8")

    outcome = run_cli(reader.program, reader.command(path, config))

    outcome.limits_held()
    assert outcome.code == 2, outcome
    (line,) = outcome.lines
    assert str(path) in line
    assert hostile.expect in line
