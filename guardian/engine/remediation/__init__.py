"""The pure remediation planner: alerts + policies + cluster snapshot + ledger + now → plan."""

from guardian.engine.remediation.guards import is_pipeline
from guardian.engine.remediation.ladder import Cycle, PlannerSettings, plan
from guardian.engine.remediation.matching import Overlap, find_overlaps, select_policy

__all__ = [
    "Cycle",
    "Overlap",
    "PlannerSettings",
    "find_overlaps",
    "is_pipeline",
    "plan",
    "select_policy",
]
