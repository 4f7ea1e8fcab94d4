"""One ``relabel_config`` of Prometheus 2.42 (``model/relabel/relabel.go``), as validated
data; the settings validate it (``guardian/app/settings/alertmanager_output.py``) and
``guardian/engine/alertmanager/relabel.py`` applies it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RelabelAction(StrEnum):
    REPLACE = "replace"
    KEEP = "keep"
    DROP = "drop"
    KEEPEQUAL = "keepequal"
    DROPEQUAL = "dropequal"
    HASHMOD = "hashmod"
    LABELMAP = "labelmap"
    LABELDROP = "labeldrop"
    LABELKEEP = "labelkeep"
    LOWERCASE = "lowercase"
    UPPERCASE = "uppercase"


DEFAULT_REGEX = "(.*)"
DEFAULT_REPLACEMENT = "$1"
DEFAULT_SEPARATOR = ";"


@dataclass(frozen=True)
class RelabelConfig:
    """Prometheus's defaults: action replace, separator ``;``, regex ``(.*)`` (anchored
    when applied), replacement ``$1``."""

    source_labels: tuple[str, ...] = ()
    separator: str = DEFAULT_SEPARATOR
    regex: str = DEFAULT_REGEX
    modulus: int = 0
    target_label: str = ""
    replacement: str = DEFAULT_REPLACEMENT
    action: RelabelAction = RelabelAction.REPLACE
