"""One APScheduler job per rule group, on the group's fixed slots.

The job computes its evaluation timestamp from the slot (never from when it happens
to run); ``coalesce=True`` and ``max_instances=1`` make a late group skip slots
instead of piling up, and each skipped slot is counted, as Prometheus does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from guardian.app.rules.runtime import RuleEngine
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.rules.slots import next_slot_after, slot_at_or_before

logger = logging.getLogger(__name__)

Clock = Callable[[], float]


class GroupScheduler:
    def __init__(self, engine: RuleEngine, *, clock: Clock = time.time) -> None:
        self.engine = engine
        self.clock = clock
        self._scheduler = BackgroundScheduler(timezone=UTC)

    def start(self) -> None:
        self._add_jobs()
        self._scheduler.start()

    def reschedule(self) -> None:
        """Replace the jobs after the engine's groups changed (a reload)."""
        self._scheduler.remove_all_jobs()
        self._add_jobs()

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop scheduling; with ``wait`` the evaluations in progress finish first."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=wait)

    def _add_jobs(self) -> None:
        now = self.clock()
        for group in self.engine.groups:
            first = next_slot_after(now, group.group.file, group.name, group.interval_seconds)
            self._scheduler.add_job(
                self.run_group,
                IntervalTrigger(
                    seconds=group.interval_seconds,
                    start_date=datetime.fromtimestamp(first, tz=UTC),
                    timezone=UTC,
                ),
                args=(group.key,),
                id=group.key,
                name=f"group {group.name}",
                coalesce=True,
                max_instances=1,
                misfire_grace_time=None,
                replace_existing=True,
            )
            logger.info(
                "group %s: every %ss, first slot %s",
                group.name,
                group.interval_seconds,
                datetime.fromtimestamp(first, tz=UTC).isoformat(),
            )

    def run_group(self, group_key: str) -> None:
        try:
            runtime = self.engine.runtime(group_key)
        except KeyError:
            return  # removed by a reload while queued
        group: CompiledGroup = runtime.compiled
        ts = slot_at_or_before(self.clock(), group.group.file, group.name, group.interval_seconds)
        last = runtime.last_ts
        if last is not None:
            if ts <= last:
                return  # this slot was already evaluated
            missed = round((ts - last) / group.interval_seconds) - 1
            if missed > 0 and runtime.evaluations > 0:
                self.engine.metrics.iterations_missed.labels(group.name).inc(missed)
                logger.warning("group %s: missed %s evaluation slot(s)", group.name, missed)
        try:
            self.engine.evaluate(group_key, ts)
        except Exception:
            logger.exception("group %s: evaluation at %.3f failed", group.name, ts)
