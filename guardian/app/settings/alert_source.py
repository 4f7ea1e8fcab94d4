"""The ``alerts:`` section: whether the controller evaluates the rules itself (``engine``)
or reads the alerts of a Prometheus or Thanos Ruler that evaluates the rendered pack
(``prometheus``)."""

from __future__ import annotations

from typing import Literal

from guardian.app.settings.clients import HttpClientSettings
from guardian_common.config_types import StrictModel


class AlertsSettings(StrictModel):
    source: Literal["engine", "prometheus"] = "engine"
    """``engine``: evaluate ``rule_files`` against ``prometheus``. ``prometheus``: read the
    alerts and rule health of the rules loaded in ``ruler`` (``/api/v1/rules``) at each
    group's evaluation slot; ``rule_files`` still lists the rules expected there."""
    ruler: HttpClientSettings | None = None
    """The Prometheus or Thanos Ruler whose ``/api/v1/rules`` is read with ``source:
    prometheus``; unset: the ``prometheus`` endpoint (not a Thanos Query: it has no rules)."""
