"""Fixtures every test shares."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

pytest_plugins = [
    "tests.plugins.prometheus_fixture",
    "tests.plugins.kube_fixture",
    "tests.plugins.alertmanager_fixture",
    "tests.plugins.pki_fixture",
]


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A CLI run in a test installs its handler on the root logger, bound to the stream
    pytest captured for that test; restore the root logger, or a thread that logs later
    writes to a closed stream ("--- Logging error ---")."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
