"""kubeconfigs read the bounded way and merged as the ``kubernetes`` client merges them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from guardian_common.errors import ConfigError
from guardian_common.kubeconfig import load_kubeconfig


def kubeconfig(path: Path, name: str, current: str | None = None, **user: str) -> Path:
    config: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": f"https://{name}:6443"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "users": [{"name": name, "user": user or {"token": "t"}}],
    }
    if current is not None:
        config["current-context"] = current
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_files_merge_as_the_client_merges_them(tmp_path: Path) -> None:
    first = kubeconfig(tmp_path / "a", "a", current="a")
    second = kubeconfig(tmp_path / "b", "b", current="b")
    merged = load_kubeconfig([str(first), str(tmp_path / "absent"), str(second)])
    assert [c["name"] for c in merged["clusters"]] == ["a", "b"]
    assert [u["name"] for u in merged["users"]] == ["a", "b"]
    assert merged["current-context"] == "b"  # the client's rule: the last one set
    assert merged["kind"] == "Config"


def test_the_first_entry_of_a_name_wins(tmp_path: Path) -> None:
    first = kubeconfig(tmp_path / "a", "same")
    second = kubeconfig(tmp_path / "b", "same")
    second.write_text(second.read_text().replace("https://same", "https://other"))
    merged = load_kubeconfig([str(first), str(second)])
    assert [c["cluster"]["server"] for c in merged["clusters"]] == ["https://same:6443"]


def test_named_files_are_made_absolute_and_checked(tmp_path: Path) -> None:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "client.crt").write_text("cert\n")
    (tmp_path / "certs" / "client.key").write_text("key\n")
    path = kubeconfig(
        tmp_path / "config",
        "a",
        **{"client-certificate": "certs/client.crt", "client-key": "certs/client.key"},
    )
    (user,) = load_kubeconfig([str(path)])["users"]
    assert user["user"]["client-key"] == str(tmp_path / "certs" / "client.key")

    os.unlink(tmp_path / "certs" / "client.key")
    os.mkfifo(tmp_path / "certs" / "client.key")
    with pytest.raises(ConfigError) as info:
        load_kubeconfig([str(path)])
    assert info.value.path == str(path)
    assert info.value.field == "users[0].user.client-key"
    assert info.value.reason == (
        f"{tmp_path / 'certs' / 'client.key'}: not a regular file (a FIFO)"
    )


def test_inline_data_wins_over_a_named_file(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "config", "a", **{"client-key": "/dev/zero", "client-key-data": "a2V5"}
    )
    (user,) = load_kubeconfig([str(path)])["users"]
    assert user["user"]["client-key"] == "/dev/zero"  # never opened: the client uses the data


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the kubeconfig is empty"),
        ("- a\n", "a kubeconfig must be a mapping"),
        ("clusters: {a: 1}\n", "clusters: must be a list"),
        ("users: [{user: {}}]\n", "users[0]: must be a mapping with a name"),
        ("contexts: [{name: c, context: [1]}]\n", "contexts[0].context: must be a mapping"),
        ("users: [{name: u, user: {tokenFile: 3}}]\n", "tokenFile: must be a file path"),
        ("a: " + "[" * 3000 + "]" * 3000 + "\n", "nest"),
    ],
)
def test_a_malformed_kubeconfig_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_kubeconfig([str(path)])
    assert str(info.value).startswith(str(path))
    assert message in str(info.value)
    assert "\n" not in str(info.value)
