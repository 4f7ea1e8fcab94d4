"""What Alertmanager says about the alerts a remediation cycle may act on: the planner's
input for ``respectSilences`` (see ``guardian/engine/remediation/guards.py``).

Pure data, filled by the app (``guardian/app/alertmanager/silence_gather.py``) from one
``GET /api/v2/alerts`` per Alertmanager and cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from guardian.model.labels import LabelSet


@dataclass(frozen=True)
class Suppressions:
    """Why alerts are held by Alertmanager this cycle.

    ``checked`` is False when no Alertmanager is configured: there is nothing to respect.
    ``unavailable`` says why no Alertmanager answered: then nothing is known, and every
    alert is held (missing data is no permission to act). ``held`` maps an alert's labels
    (as the engine holds them) to why it is held: silenced, inhibited, or not yet known to
    Alertmanager. Of the alerts asked about (``asked``), one not in ``held`` is known to
    Alertmanager and not suppressed; one not asked about (it fired since) is unknown.
    """

    checked: bool = False
    unavailable: str = ""
    held: Mapping[LabelSet, str] = field(default_factory=dict)
    asked: frozenset[LabelSet] = frozenset()

    def reason(self, labels: LabelSet) -> str | None:
        """Why the alert with ``labels`` may not be acted on, or None."""
        if not self.checked:
            return None
        if self.unavailable:
            return self.unavailable
        if labels not in self.asked:
            name = labels.get("alertname", "the alert")
            return f"Alertmanager was not asked about {name} this cycle (missing data: no step)"
        return self.held.get(labels)


NOT_CHECKED = Suppressions()
