"""The ``alertmanager:`` section: where the engine's alerts go, with Prometheus's notifier
options, and which Alertmanagers the remediation loop asks about silences.

Each Alertmanager is one HTTP endpoint with the same client options as ``prometheus:``
(TLS, basic auth, bearer token file, headers). ``alert_relabel_configs`` take Prometheus's
``relabel_config`` syntax and are checked here as Prometheus checks them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from guardian.app.settings.clients import HttpClientSettings
from guardian.engine.alertmanager.relabel import RelabelError, compile_anchored
from guardian.model.labels import is_valid_label_name
from guardian.model.relabel_config import (
    DEFAULT_REGEX,
    DEFAULT_REPLACEMENT,
    DEFAULT_SEPARATOR,
    RelabelAction,
    RelabelConfig,
)
from guardian_common.config_types import Bool, Duration, Int, StrictModel

# A target label that uses $1 / ${name} (relabel.go relabelTarget).
_TEMPLATED_TARGET = r"^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$"

Action = Literal[
    "replace",
    "keep",
    "drop",
    "keepequal",
    "dropequal",
    "hashmod",
    "labelmap",
    "labeldrop",
    "labelkeep",
    "lowercase",
    "uppercase",
]


class RelabelConfigSettings(StrictModel):
    """One ``relabel_config``, with Prometheus 2.42's defaults and checks."""

    source_labels: list[str] = Field(default_factory=list)
    """Labels whose values are joined with ``separator`` and matched against ``regex``."""
    separator: str = DEFAULT_SEPARATOR
    """Placed between the source labels' values."""
    regex: str = DEFAULT_REGEX
    """RE2 expression, anchored at both ends."""
    modulus: Int = Field(default=0, ge=0)
    """For ``hashmod``: the modulus of the hash of the joined values."""
    target_label: str = ""
    """The label written by replace, hashmod, lowercase and uppercase (compared by
    keepequal and dropequal); ``$1``/``${name}`` allowed for replace."""
    replacement: str = DEFAULT_REPLACEMENT
    """The value written by replace (the label name for labelmap); ``$1`` expands."""
    action: Action = "replace"
    """What to do; Prometheus's names."""

    @field_validator("action", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @field_validator("source_labels")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        bad = [n for n in names if not is_valid_label_name(n)]
        if bad:
            raise ValueError(f"invalid label name(s) {', '.join(map(repr, bad))}")
        return names

    @field_validator("regex")
    @classmethod
    def _regex(cls, regex: str) -> str:
        try:
            compile_anchored(regex)
        except RelabelError as exc:
            raise ValueError(str(exc)) from None
        return regex

    @model_validator(mode="after")
    def _consistent(self) -> RelabelConfigSettings:
        """``relabel.Config.Validate``, in Prometheus's words."""
        action, target = self.action, self.target_label
        writes = action in ("replace", "hashmod", "lowercase", "uppercase")
        if (writes or action in ("keepequal", "dropequal")) and not target:
            raise ValueError(f"relabel configuration for {action} action requires 'target_label'")
        if action == "hashmod" and self.modulus == 0:
            raise ValueError("relabel configuration for hashmod requires non-zero modulus")
        templated = action == "replace" and "$" in target
        if target and not templated and not is_valid_label_name(target):
            raise ValueError(f"{target!r} is invalid 'target_label' for {action} action")
        if templated and compile_anchored(_TEMPLATED_TARGET).fullmatch(target) is None:
            raise ValueError(f"{target!r} is invalid 'target_label' for {action} action")
        fixed = action in ("lowercase", "uppercase", "keepequal", "dropequal")
        if fixed and self.replacement != DEFAULT_REPLACEMENT:
            raise ValueError(f"'replacement' can not be set for {action} action")
        if action in ("keepequal", "dropequal") and (
            self.regex != DEFAULT_REGEX or self.modulus or self.separator != DEFAULT_SEPARATOR
        ):
            raise ValueError(
                f"{action} action requires only 'source_labels' and 'target_label', "
                "and no other fields"
            )
        if action in ("labeldrop", "labelkeep") and (
            self.source_labels
            or target
            or self.modulus
            or self.separator != DEFAULT_SEPARATOR
            or self.replacement != DEFAULT_REPLACEMENT
        ):
            raise ValueError(f"{action} action requires only 'regex', and no other fields")
        if action == "labelmap" and (
            compile_anchored(_TEMPLATED_TARGET).fullmatch(self.replacement) is None
        ):
            raise ValueError(f"{self.replacement!r} is invalid 'replacement' for {action} action")
        return self

    def config(self) -> RelabelConfig:
        return RelabelConfig(
            tuple(self.source_labels),
            self.separator,
            self.regex,
            self.modulus,
            self.target_label,
            self.replacement,
            RelabelAction(self.action),
        )


class AlertmanagerEndpoint(HttpClientSettings):
    timeout: Duration = 10.0
    """Seconds one request to this Alertmanager may take. 10s: Prometheus's default for
    an ``alertmanagers`` entry."""


class AlertmanagerSettings(StrictModel):
    alertmanagers: list[AlertmanagerEndpoint] = Field(min_length=1)
    """The Alertmanagers, by base URL (with any path prefix, e.g. ``http://am:9093``). Alerts
    go to every one, as Prometheus sends them; an HA pair gossips silences, so one answer
    about silences is enough."""
    send: Bool = True
    """Post the engine's firing and recently resolved alerts. Off: the Alertmanagers are
    only asked about silences (as with ``alerts.source: prometheus``, where Prometheus sends)."""
    resend_delay: Duration = 60.0
    """Seconds before a still-firing alert is sent again (``--rules.alert.resend-delay``).
    1m: Prometheus's default; Alertmanager keeps an alert until the ``endsAt`` we give,
    four resend delays (or evaluation intervals) ahead."""
    queue_capacity: Int = Field(default=10_000, ge=1, le=10_000_000)
    """Alerts waiting for an Alertmanager (``--alertmanager.notification-queue-capacity``).
    While none accepts, the queue keeps them; past this many the oldest are dropped and
    counted in ``guardian_alertmanager_notifications_dropped_total``. 10000: Prometheus's
    default."""
    alert_relabel_configs: list[RelabelConfigSettings] = Field(default_factory=list)
    """Relabelling of each alert sent, after the external labels are added (Prometheus's
    ``alerting.alert_relabel_configs``); an alert a rule drops is not sent."""
    silence_wait: Duration = 2.0
    """Seconds a remediation cycle waits for the alerts just queued to reach Alertmanager
    before it asks about silences. 2s: a firing alert is then normally known at once."""

    def relabel_configs(self) -> tuple[RelabelConfig, ...]:
        return tuple(c.config() for c in self.alert_relabel_configs)
