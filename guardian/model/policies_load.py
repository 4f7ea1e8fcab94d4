"""Load ReclaimPolicy documents from YAML text, with file, line and field in every error.

A file may hold several documents separated by ``---``. Text in, policies out; reading
files is the caller's job.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from guardian.model.policies import API_VERSION, KINDS, ReclaimPolicy
from guardian_common.errors import ConfigError, ConfigErrors
from guardian_common.yamldoc import YamlDocument, parse_yaml

_SEPARATOR = re.compile(r"^---\s*(#.*)?$")


def _documents(text: str) -> list[tuple[int, str]]:
    """(line offset, text) of each YAML document in ``text``."""
    docs: list[tuple[int, str]] = []
    start = 0
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if _SEPARATOR.match(line.rstrip("\r\n")):
            docs.append((start, "".join(lines[start:index])))
            start = index + 1
    docs.append((start, "".join(lines[start:])))
    return [(offset, body) for offset, body in docs if body.strip()]


def _shift(doc: YamlDocument, offset: int) -> YamlDocument:
    doc.lines = {path: line + offset for path, line in doc.lines.items()}
    return doc


# Set by the API server: a `kubectl get -o yaml` export carries them; they are not policy.
_SERVER_SET = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "finalizers",
    "ownerReferences",
)


def _exported(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without what the API server adds (status, server-set metadata)."""
    meta = data.get("metadata")
    out = {k: v for k, v in data.items() if k != "status"}
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if k not in _SERVER_SET}
    return out


def _validate_all(doc: YamlDocument) -> list[ReclaimPolicy]:
    """One policy, or each item of a ``kubectl get -o yaml`` List."""
    data: Any = doc.data
    if isinstance(data, dict) and data.get("kind") == "List" and "items" in data:
        items = data.get("items")
        if not isinstance(items, list):
            raise ConfigErrors([doc.error("items must be a list", ("items",))])
        errors: list[ConfigError] = []
        found = []
        for i, item in enumerate(items):
            try:
                found.append(_validate(doc, item, ("items", i)))
            except ConfigErrors as exc:
                errors.extend(exc.errors)
        if errors:
            raise ConfigErrors(errors)
        return found
    return [_validate(doc, data, ())]


def _validate(doc: YamlDocument, data: Any, at: tuple[str | int, ...]) -> ReclaimPolicy:
    if not isinstance(data, dict):
        raise ConfigErrors([doc.error("a policy document must be a mapping", at)])
    if data.get("apiVersion") != API_VERSION or data.get("kind") not in KINDS:
        field = "apiVersion" if data.get("apiVersion") != API_VERSION else "kind"
        raise ConfigErrors(
            [
                doc.error(
                    f"expected apiVersion {API_VERSION} and kind {' or '.join(KINDS)}, got "
                    f"{data.get('apiVersion')!r} {data.get('kind')!r}",
                    (*at, field),
                )
            ]
        )
    try:
        policy = ReclaimPolicy.model_validate(_exported(data))
    except ValidationError as exc:
        raise ConfigErrors(
            [doc.error(msg, (*at, *loc)) for loc, msg in validation_findings(exc)]
        ) from None
    lines = {
        field_path(path[len(at) :]): line
        for path, line in doc.lines.items()
        if path[: len(at)] == at and len(path) > len(at)
    }
    return policy.located(f"{doc.source}:{doc.line(at) or doc.line(()) or 1}", lines)


def validation_findings(exc: ValidationError) -> list[tuple[tuple[str | int, ...], str]]:
    """(field path, message) per finding: the same words for a file and a cluster object."""
    found = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if isinstance(p, (str, int)))
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field"
        found.append((loc, message))
    return found


def field_path(loc: tuple[str | int, ...]) -> str:
    """``spec.scope.namespaces[0]``: a finding's field as Kubernetes writes it."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def policy_from_object(obj: Any) -> ReclaimPolicy:
    """A policy read from the cluster (a ClusterReclaimPolicy or ReclaimPolicy object).
    Server-set metadata and status are ignored. Raises ConfigErrors naming each field."""
    meta = obj.get("metadata") or {}
    data = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {
            k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta
        },
        "spec": obj.get("spec") or {},
    }
    where = "/".join(str(p) for p in (meta.get("namespace"), meta.get("name")) if p)
    source = f"{obj.get('kind')} {where}"
    try:
        policy = ReclaimPolicy.model_validate(data)
    except ValidationError as exc:
        raise ConfigErrors(
            [ConfigError(msg, field=field_path(loc)) for loc, msg in validation_findings(exc)]
        ) from None
    return policy.located(source)


def parse_policies(text: str, source: str) -> list[ReclaimPolicy]:
    """Every policy in ``text`` (the content of ``source``). Raises ConfigErrors with all
    findings, including a name defined twice."""
    errors: list[ConfigError] = []
    policies: list[ReclaimPolicy] = []
    for offset, body in _documents(text):
        try:
            doc = _shift(parse_yaml(body, source), offset)
            if doc.data is None:
                continue
            policies.extend(_validate_all(doc))
        except ConfigErrors as exc:
            errors.extend(exc.errors)
        except ConfigError as exc:
            if exc.line is not None:
                exc = ConfigError(
                    exc.reason, path=exc.path, line=exc.line + offset, field=exc.field
                )
            errors.append(exc)
    if errors:
        raise ConfigErrors(errors)
    return policies


def check_unique(policies: list[ReclaimPolicy]) -> None:
    """Policy names are identities (ledger, annotations): each may be defined once."""
    seen: dict[str, str] = {}
    errors: list[ConfigError] = []
    for policy in policies:
        if policy.name in seen:
            path, _, line = policy.source.rpartition(":")
            errors.append(
                ConfigError(
                    f"policy {policy.name!r} already defined at {seen[policy.name]}",
                    path=path,
                    line=int(line) if line.isdigit() else None,
                    field="metadata.name",
                )
            )
        else:
            seen[policy.name] = policy.source
    if errors:
        raise ConfigErrors(errors)
