"""``guardian rules test``: promtool-format rule tests run through the engine."""

from guardian.app.promtest.file_run import FileResult, GroupResult, Status, run_test_file

__all__ = ["FileResult", "GroupResult", "Status", "run_test_file"]
