"""kubeconfig files read the bounded way, merged as the ``kubernetes`` client merges them.

The client library would read the files itself with an unbounded ``open().read()`` and
PyYAML's recursive loader: a FIFO blocks it, ``/dev/zero`` fills the memory and 3,000
levels of nesting end in a RecursionError. Here each file goes through
:func:`guardian_common.files.read_text` (a regular file of at most 4 MiB, UTF-8) and
:func:`guardian_common.yamldoc.parse_yaml` (bounded depth and nodes), and the client gets
the merged dict (``new_client_from_config_dict``).

Files the kubeconfig names (``certificate-authority``, ``client-certificate``,
``client-key``, ``tokenFile``) are made absolute, relative to the kubeconfig that names
them as kubectl takes them, and checked the same way (regular files within their limit)
before the client opens them.

Merging follows the client's ``KubeConfigMerger``: the files in order, each cluster,
context and user kept from the first file that names it, ``current-context`` from the
last file that sets it, every other key from the first file.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from guardian_common.errors import ConfigError
from guardian_common.files import CERTIFICATE, KUBECONFIG, SECRET, FileKind, check_file, read_text
from guardian_common.yamldoc import YamlDocument, parse_yaml

_LISTS = ("clusters", "contexts", "users")
# Keys of a cluster or user entry that name a file, and the limit of each.
_FILES: dict[str, dict[str, FileKind]] = {
    "cluster": {"certificate-authority": CERTIFICATE},
    "user": {"client-certificate": CERTIFICATE, "client-key": CERTIFICATE, "tokenFile": SECRET},
}


def load_kubeconfig(paths: Sequence[str]) -> dict[str, Any]:
    """The merged kubeconfig of ``paths`` (``~`` expanded; files that do not exist are
    skipped, as the client skips them). Raises ConfigError naming the file, the line and
    the field; none when no file exists (the caller says so first)."""
    merged: dict[str, Any] | None = None
    for raw in paths:
        path = os.path.expanduser(raw)
        if not os.path.lexists(path):
            continue
        config = _load_one(path)
        if merged is None:
            merged = copy.deepcopy(config)
            for key in _LISTS:
                merged[key] = []
        for key in _LISTS:
            _merge(merged[key], config.get(key) or [])
        if "current-context" in config:
            merged["current-context"] = config["current-context"]
    if merged is None:
        raise ConfigError("no kubeconfig file exists", path=":".join(paths))
    return merged


def _load_one(path: str) -> dict[str, Any]:
    doc = parse_yaml(read_text(path, KUBECONFIG.max_bytes, KUBECONFIG.what), path)
    if doc.data is None:
        raise ConfigError("the kubeconfig is empty", path=path)
    if not isinstance(doc.data, dict):
        raise ConfigError("a kubeconfig must be a mapping", path=path, line=1)
    base = Path(os.path.abspath(os.path.dirname(path)))  # as the client: links not followed
    for key in _LISTS:
        entries = doc.data.get(key)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise doc.error("must be a list", (key,))
        for index, entry in enumerate(entries):
            _check_entry(doc, (key, index), entry, base)
    return doc.data


def _check_entry(doc: YamlDocument, at: tuple[str, int], entry: Any, base: Path) -> None:
    """A named entry whose files are absolute and safe to open."""
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise doc.error("must be a mapping with a name", at)
    section = at[0].removesuffix("s")  # cluster, context, user
    body = entry.get(section)
    if body is None:
        return
    if not isinstance(body, dict):
        raise doc.error("must be a mapping", (*at, section))
    for key, kind in _FILES.get(section, {}).items():
        named = body.get(key)
        if named is None or ("token" if key == "tokenFile" else f"{key}-data") in body:
            continue  # inline data wins, as in the client
        where = (*at, section, key)
        if not isinstance(named, str) or not named:
            raise doc.error("must be a file path", where)
        path = str(base / os.path.expanduser(named))
        try:
            check_file(path, kind)
        except ConfigError as exc:
            raise doc.error(f"{path}: {exc.reason}", where) from None
        body[key] = path


def _merge(into: list[Any], entries: list[Any]) -> None:
    """Add each entry whose name ``into`` does not hold yet (the first one wins)."""
    names = {entry["name"] for entry in into}
    for entry in entries:
        if entry["name"] not in names:
            names.add(entry["name"])
            into.append(entry)
