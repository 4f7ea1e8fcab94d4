"""Run one promtool-format test file: load it and its rule files, run each test group.

``rule_files`` are globs relative to the test file's directory, as promtool resolves
them. Groups are evaluated in the order of ``group_eval_order`` (the groups it lists
first, in its order), then in file order. Each test group gets its own short-lived
Prometheus: the groups' input series must not see each other, and time must start at 0
for each (``time()`` is the eval time, as in promtool).
"""

from __future__ import annotations

import enum
import glob
import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import requests

from guardian.adapters.local_prometheus import PrometheusBinaries
from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
from guardian.adapters.prometheus_range import RangeQuerier
from guardian.adapters.remote_write import RemoteWriteClient
from guardian.app.promtest.group_prometheus import UnsupportedTestError, start_test_prometheus
from guardian.app.promtest.group_run import GroupRun, TestServer
from guardian.app.rules.build import read_rule_files
from guardian.engine.promtest.model import TestGroup, UnitTestFile, parse_test_file
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.model.http_client import HttpClientConfig
from guardian_common.errors import ConfigError, ConfigErrors
from guardian_common.files import read_text

logger = logging.getLogger(__name__)


class Status(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class GroupResult:
    name: str
    status: Status
    messages: tuple[str, ...] = ()


@dataclass
class FileResult:
    path: str
    groups: list[GroupResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the file itself could not be run
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and all(g.status is Status.PASSED for g in self.groups)


def resolve_rule_files(test: UnitTestFile) -> tuple[list[str], list[str]]:
    """Rule file paths (globs expanded, relative to the test file) and warnings."""
    base = Path(test.path).parent
    paths: list[str] = []
    warnings: list[str] = []
    for pattern in test.rule_files:
        full = pattern if Path(pattern).is_absolute() else str(base / pattern)
        matches = sorted(glob.glob(full))
        if not matches:
            warnings.append(f"  WARNING: no file match pattern {pattern}")
        paths.extend(matches)
    return paths, warnings


def load_groups(test: UnitTestFile, paths: list[str]) -> list[CompiledGroup]:
    """Compiled rule groups in evaluation order. Raises ConfigErrors."""
    groups = [
        CompiledGroup.compile(g, test.evaluation_interval_ms / 1000)
        for rule_file in read_rule_files(paths)
        for g in rule_file.groups
    ]
    names = {g.name for g in groups}
    unknown = [n for n in test.group_eval_order if n not in names]
    if unknown:
        raise ConfigErrors(
            [
                ConfigError(
                    f"group {', '.join(unknown)} in group_eval_order is not in the rule files",
                    path=test.path,
                    field="group_eval_order",
                )
            ]
        )
    rank = {name: i for i, name in enumerate(test.group_eval_order)}
    order = sorted(range(len(groups)), key=lambda i: (rank.get(groups[i].name, len(rank)), i))
    return [groups[i] for i in order]


def _run_group(
    test: UnitTestFile,
    group: TestGroup,
    rule_groups: list[CompiledGroup],
    binaries: PrometheusBinaries,
    workroot: Path,
) -> GroupResult:
    if group.uses_stale:
        return GroupResult(
            group.name,
            Status.UNSUPPORTED,
            ("    input_series use 'stale': backfill cannot write staleness markers",),
        )
    workdir = Path(tempfile.mkdtemp(prefix="group-", dir=workroot))
    try:
        prom = start_test_prometheus(workdir, group, test.evaluation_interval_ms, binaries)
    except UnsupportedTestError as exc:
        return GroupResult(group.name, Status.UNSUPPORTED, (f"    {exc}",))
    try:
        # A loopback server: no proxy from the environment applies (and looking one up
        # for every request was a fifth of the run time).
        session = requests.Session()
        session.trust_env = False
        querier = PrometheusQuerier(
            PrometheusAccess(HttpClientConfig(prom.url, timeout=60), trust_env=False)
        )
        server = TestServer(
            querier,
            RemoteWriteClient(
                HttpClientConfig(f"{prom.url}/api/v1/write", timeout=60),
                max_samples_per_request=10_000,
                session=session,
            ),
            RangeQuerier(prom.url, session=session),
        )
        try:
            run = GroupRun(rule_groups, group, server, test.evaluation_interval_ms)
            failures = run.run()
        finally:
            querier.close()
            session.close()
    finally:
        prom.stop()
    status = Status.FAILED if failures else Status.PASSED
    return GroupResult(group.name, status, tuple(failures))


def run_test_file(
    path: str, binaries: PrometheusBinaries, workroot: Path | None = None
) -> FileResult:
    """Run every test group of the file at ``path``. Never raises for a bad file."""
    result = FileResult(path)
    try:
        test = parse_test_file(read_text(path), path)
        rule_paths, result.warnings = resolve_rule_files(test)
        rule_groups = load_groups(test, rule_paths)
    except ConfigErrors as exc:
        result.errors += [f"  {e}" for e in exc.errors]
        return result
    except ConfigError as exc:  # the file itself cannot be read
        result.errors.append(f"  {exc}")
        return result
    with tempfile.TemporaryDirectory(prefix="guardian-rules-test-", dir=workroot) as tmp:
        for group in test.tests:
            try:
                result.groups.append(_run_group(test, group, rule_groups, binaries, Path(tmp)))
            except Exception as exc:  # one test group's failure must not stop the others
                logger.debug("test group %r could not run", group.name, exc_info=True)
                result.groups.append(
                    GroupResult(group.name, Status.FAILED, (f"    name: {group.name},\n    {exc}",))
                )
    return result
