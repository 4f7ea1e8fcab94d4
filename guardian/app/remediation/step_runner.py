"""Apply one ladder step: the one path for the loop's steps and for ``guardian restore``.

``check`` reads the workload again and says whether the step is still wanted (the
evidence check just before acting). A 409 means the object changed under us: read
again, check again, at most ``MAX_CONFLICT_RETRIES`` times. Every outcome, a failure
included, goes to the ledger through the StepRecorder. NotLeader (the fence refused a
write) is raised as it is: this replica must stop, and record nothing more.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from guardian.adapters.kube.executor import Executor, Result
from guardian.adapters.kube.fence import NotLeader
from guardian.adapters.kube.rest import Conflict, Forbidden, NotFound
from guardian.app.remediation.recording import StepRecorder
from guardian.model.reclaim import PlannedAction, WorkloadState
from guardian_common.errors import GuardianError, PermanentError, TransientError

logger = logging.getLogger(__name__)

MAX_CONFLICT_RETRIES = 3

Ready = tuple[PlannedAction, WorkloadState]  # the step still wanted, the workload as just read
Check = Callable[[], Ready | None]  # None: nothing to do any more


@dataclass(frozen=True)
class StepReport:
    """How one step ended: the executor's result, or the error that stopped it."""

    result: Result | None = None
    error: GuardianError | None = None  # None with no result: the check found nothing to do

    def done(self) -> Result:
        """The result; raises the error that stopped the step instead."""
        if self.result is None:
            raise self.error or PermanentError("nothing to do: the step is no longer wanted")
        return self.result


@dataclass(frozen=True)
class WriteClock:
    """When a step's write is made: the wall clock, read just before it (after the
    re-check, while the fence holds), so that the ledger, the shared state and the
    annotations say when it happened, not the cycle's slot. A slot further from the
    wall clock than ``max_skew`` is a replay or a test: the slot stands."""

    wall: Callable[[], float] | None = None
    max_skew: float = 60.0

    def at(self, slot: float) -> float:
        if self.wall is None:
            return slot
        now = self.wall()
        return now if 0.0 <= now - slot <= self.max_skew else slot


class StepRunner:
    def __init__(
        self, executor: Executor, recorder: StepRecorder, clock: WriteClock = WriteClock()
    ) -> None:
        self.executor = executor
        self.recorder = recorder
        self.clock = clock

    def run(self, check: Check, slot: float) -> StepReport:
        action: PlannedAction | None = None
        now = slot
        for _attempt in range(MAX_CONFLICT_RETRIES):
            ready = check()
            if ready is None:
                return StepReport()
            action, ws = ready
            now = self.clock.at(slot)
            try:
                result = self.executor.apply(action, ws, now)
            except Conflict as exc:
                self.recorder.metrics.conflicts.inc()
                logger.info("conflict on %s: reading again and re-planning (%s)", ws.ref, exc)
                continue
            except NotLeader:
                raise
            except NotFound as exc:
                logger.info("%s disappeared during %s: dropped", ws.ref, action.step)
                self.recorder.dropped(action, now)
                return StepReport(error=exc)
            except Forbidden as exc:
                self.recorder.metrics.api_forbidden.inc()
                logger.error("forbidden: %s: grant the controller's ClusterRole this verb", exc)
                self.recorder.failed(action, now, f"forbidden by RBAC: {exc}")
                return StepReport(error=exc)
            except GuardianError as exc:
                self.recorder.failed(action, now, str(exc))
                return StepReport(error=exc)
            self.recorder.applied(action, ws, now, result)
            return StepReport(result)
        gave_up = f"gave up after {MAX_CONFLICT_RETRIES} conflicts"
        if action is not None:  # always: every attempt got as far as applying
            self.recorder.failed(action, now, gave_up)
        return StepReport(error=TransientError(f"{gave_up}: it kept changing; try again"))
