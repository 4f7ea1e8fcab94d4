"""``guardian rules test``: promtool-format rule tests run through the engine."""

from guardian.app.promtest.files import FileResult, GroupResult, Status, run_test_file

__all__ = ["FileResult", "GroupResult", "Status", "run_test_file"]
