"""What the Alertmanagers' answers mean for the alerts a remediation cycle may act on.

An alert of ours is found in an Alertmanager's list by its labels: every label it carries
when sent (after external labels and relabelling) must be on the listed alert with the
same value. Prometheus as the source adds its own external labels, which we do not know:
they only add labels, so the same test finds its alerts too.

- silenced (``silencedBy``) → held: "silenced in Alertmanager by X until T";
- inhibited (``inhibitedBy``) → held, naming the inhibiting alert when it is listed;
- not listed by any Alertmanager that answered → held: we cannot tell (missing data);
- listed and neither → free to act on;
- no Alertmanager answered → every alert held (:attr:`Suppressions.unavailable`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from guardian.engine.golang.regexp import quote_meta
from guardian.model.alertmanager_api import AlertmanagerView, Silence, StoredAlert
from guardian.model.labels import LabelSet
from guardian.model.suppressions import Suppressions
from guardian.model.times import rfc3339
from guardian_common.words import plural

Outgoing = Callable[[LabelSet], LabelSet | None]  # our labels -> as sent (None: never sent)


def alertname_filter(alerts: Iterable[LabelSet]) -> str:
    """One ``filter`` matcher for the alert names of ``alerts``: ``alertname=~"A|B"``."""
    names = sorted({labels.get("alertname", "") for labels in alerts} - {""})
    pattern = "|".join(quote_meta(name) for name in names)
    quoted = pattern.replace("\\", "\\\\").replace('"', '\\"')
    return f'alertname=~"{quoted}"'


def _covers(stored: LabelSet, wanted: LabelSet) -> bool:
    return all(stored.get(name) == value for name, value in wanted.items())


def _describe(alert: StoredAlert) -> str:
    labels = alert.labels
    where = ",".join(f"{k}={labels[k]}" for k in ("cluster", "node", "instance") if k in labels)
    return f"{labels.get('alertname', '?')}{{{where}}}" if where else labels.get("alertname", "?")


def _silenced(ids: Sequence[str], views: Sequence[AlertmanagerView]) -> str:
    known: list[Silence] = [
        view.silences[sid] for view in views for sid in ids if sid in view.silences
    ]
    if not known:
        return f"silenced in Alertmanager (silence {', '.join(sorted(set(ids)))})"
    last = max(known, key=lambda s: (s.ends_at, s.id))
    who = last.created_by or "someone"
    comment = f": {last.comment}" if last.comment else ""
    more = len({s.id for s in known}) - 1
    others = f"; {plural(more, 'more silence')}" if more > 0 else ""
    return (
        f"silenced in Alertmanager by {who} until {rfc3339(last.ends_at)} "
        f"(silence {last.id}{comment}{others})"
    )


def _inhibited(fingerprints: Sequence[str], views: Sequence[AlertmanagerView]) -> str:
    by_fp = {a.fingerprint: a for view in views for a in view.alerts}
    names = sorted(
        _describe(by_fp[fp]) if fp in by_fp else f"alert {fp}" for fp in set(fingerprints)
    )
    return f"inhibited in Alertmanager by {', '.join(names)}"


def hold_reason(
    labels: LabelSet, outgoing: Outgoing, views: Sequence[AlertmanagerView]
) -> str | None:
    """Why Alertmanager holds the alert with ``labels`` (None: it does not)."""
    wanted = outgoing(labels)
    if wanted is None:
        return None  # relabelling drops it: it never reaches Alertmanager to be silenced
    found = [a for view in views for a in view.alerts if _covers(a.labels, wanted)]
    if not found:
        name = labels.get("alertname", "the alert")
        return (
            f"{name} is not in Alertmanager yet, so whether it is silenced is unknown "
            "(missing data: no step)"
        )
    silenced = [sid for a in found for sid in a.silenced_by]
    if silenced:
        return _silenced(silenced, views)
    inhibited = [fp for a in found for fp in a.inhibited_by]
    if inhibited:
        return _inhibited(inhibited, views)
    return None


def suppressions(
    alerts: Iterable[LabelSet],
    views: Sequence[AlertmanagerView],
    errors: Sequence[str],
    outgoing: Outgoing,
) -> Suppressions:
    """The cycle's view from the answers of the Alertmanagers that answered (``views``)
    and the errors of those that did not."""
    asked = frozenset(alerts)
    if not views:
        why = "; ".join(errors) or "no Alertmanager configured to ask"
        return Suppressions(
            checked=True,
            unavailable=f"no Alertmanager answered, so silences are unknown ({why}): missing "
            "data, no step",
            asked=asked,
        )
    held: dict[LabelSet, str] = {}
    for labels in asked:
        reason = hold_reason(labels, outgoing, views)
        if reason is not None:
            held[labels] = reason
    return Suppressions(checked=True, held=held, asked=asked)
