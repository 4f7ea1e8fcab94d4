"""Prometheus 2.42's relabelling (``model/relabel/relabel.go`` ``Process``/``relabel``), as
the notifier applies ``alerting.alert_relabel_configs`` to every alert it sends.

Regular expressions are Go's (RE2), anchored as ``relabel.NewRegexp`` anchors them;
``$1``/``${name}`` expand as Go's ``Regexp.ExpandString``. Label sets are plain dicts here;
an empty value is an absent label.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from functools import lru_cache

from guardian.engine.golang.regexp import Regexp, RegexpError, compile_regexp
from guardian.model.labels import LabelSet, is_valid_label_name
from guardian.model.relabel_config import RelabelAction, RelabelConfig


class RelabelError(ValueError):
    """A relabel regex that RE2 would refuse (the settings check it at load)."""


@lru_cache(maxsize=512)
def compile_anchored(pattern: str) -> Regexp:
    """The pattern as ``relabel.NewRegexp`` compiles it: ``^(?:pattern)$``."""
    try:
        return compile_regexp(f"^(?:{pattern})$")
    except RegexpError as exc:
        raise RelabelError(str(exc)) from None


def _set(labels: dict[str, str], name: str, value: str) -> None:
    if value:
        labels[name] = value
    else:
        labels.pop(name, None)  # labels.Builder: setting "" deletes


def _replace(cfg: RelabelConfig, labels: dict[str, str], value: str) -> None:
    regex = compile_anchored(cfg.regex)
    match = regex.search(value)
    if match is None:
        return  # no match, no replacement
    target = regex.expand_string(cfg.target_label, match)
    if not is_valid_label_name(target):
        labels.pop(cfg.target_label, None)
        return
    result = regex.expand_string(cfg.replacement, match)
    if not result:
        labels.pop(cfg.target_label, None)
        return
    labels[target] = result


def _hashmod(value: str, modulus: int) -> str:
    digest = hashlib.md5(value.encode(), usedforsecurity=False).digest()
    # The last 8 bytes, big-endian, as Prometheus has always done.
    return str(int.from_bytes(digest[8:], "big") % modulus)


def _by_name(cfg: RelabelConfig, labels: dict[str, str]) -> None:
    """labelmap, labeldrop, labelkeep: decided on the label names as they were before."""
    regex = compile_anchored(cfg.regex)
    for name, value in sorted(labels.items()):
        matched = regex.search(name)
        if cfg.action is RelabelAction.LABELMAP:
            if matched is not None:
                _set(labels, regex.expand_string(cfg.replacement, matched), value)
        elif (matched is not None) is (cfg.action is RelabelAction.LABELDROP):
            labels.pop(name, None)


def relabel_one(cfg: RelabelConfig, labels: dict[str, str]) -> bool:
    """Apply ``cfg`` to ``labels`` in place; False when the alert is dropped."""
    value = cfg.separator.join(labels.get(name, "") for name in cfg.source_labels)
    action = cfg.action
    if action in (RelabelAction.DROP, RelabelAction.KEEP):
        matched = compile_anchored(cfg.regex).match_string(value)
        return matched is (action is RelabelAction.KEEP)
    if action in (RelabelAction.DROPEQUAL, RelabelAction.KEEPEQUAL):
        equal = labels.get(cfg.target_label, "") == value
        return equal is (action is RelabelAction.KEEPEQUAL)
    if action is RelabelAction.REPLACE:
        _replace(cfg, labels, value)
    elif action is RelabelAction.LOWERCASE:
        _set(labels, cfg.target_label, value.lower())
    elif action is RelabelAction.UPPERCASE:
        _set(labels, cfg.target_label, value.upper())
    elif action is RelabelAction.HASHMOD:
        _set(labels, cfg.target_label, _hashmod(value, cfg.modulus))
    else:
        _by_name(cfg, labels)
    return True


def process(labels: Mapping[str, str], configs: Iterable[RelabelConfig]) -> LabelSet | None:
    """``relabel.Process``: the relabelled set, or None if a config dropped it."""
    out = dict(labels)
    for cfg in configs:
        if not relabel_one(cfg, out):
            return None
    return LabelSet(out)
