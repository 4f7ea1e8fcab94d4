"""No document cites a path that exists only on a development machine.

A reader has a checkout and an installed GPU Guardian, not our workspace: paths such as
a workspace root, a sibling ``shared/`` folder, pytest's temporary directories, a home
directory or the inside of a virtual environment mean nothing to them. Commands run from
the repository root (``.venv/bin/python …``, the environment ``make`` creates there) are
fine: they are relative to the checkout.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted(
    [*ROOT.glob("docs/**/*.md"), ROOT / "README.md", ROOT / "rules/README.md"],
    key=lambda p: str(p),
)

# What a development machine's path looks like, and why it is one.
DEV_PATHS = {
    r"(?<![\w.-])/work/": "a workspace root",
    r"\.\./shared/": "a folder beside the checkout",
    r"(?<![\w.-])/tmp/pytest": "pytest's temporary directory",
    r"pytest-of-\w+": "pytest's temporary directory",
    r"(?<![\w.-])/home/\w+": "a home directory",
    r"(?<![\w.-])/Users/\w+": "a home directory",
    r"(?<![\w.-])/root/": "a home directory",
    r"/\.venv/": "a virtual environment outside the checkout",
    r"\.venv/lib/|site-packages/": "the inside of a virtual environment",
    r"\bmain/\.venv\b": "a virtual environment outside the checkout",
}


def dev_paths(text: str) -> list[str]:
    """``line N: what (why)`` for each development path in ``text``."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for pattern, why in DEV_PATHS.items():
            found += [f"line {number}: {m.group(0)!r} ({why})" for m in re.finditer(pattern, line)]
    return found


def test_the_documents_were_found() -> None:
    assert len(DOCS) >= 10
    assert all(p.is_file() for p in DOCS)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_document_cites_a_development_machine_path(doc: Path) -> None:
    found = dev_paths(doc.read_text(encoding="utf-8"))
    assert not found, f"{doc.relative_to(ROOT)} cites development paths: {found}"


@pytest.mark.parametrize(
    "text",
    [
        "see /work/main/docs/slack.md",
        "the fixtures in ../shared/data",
        "written to /tmp/pytest-of-ci/pytest-3/x0/state.db",
        "installed in /home/alice/src/gpu-guardian/.venv/bin/guardian",
        "from .venv/lib/python3.11/site-packages/kubernetes",
    ],
)
def test_the_check_finds_development_paths(text: str) -> None:
    assert dev_paths(text)


@pytest.mark.parametrize(
    "text",
    [
        "make demo            # or: .venv/bin/python -m testbed.demo",
        "Each command creates `.venv/` and installs the project",
        "/opt/gpu-guardian in the image",
        "state_path: /var/lib/gpu-guardian/state.db",
        "https://gpu-guardian.io/runbooks/gpuidle",
    ],
)
def test_the_check_leaves_checkout_and_installed_paths_alone(text: str) -> None:
    assert not dev_paths(text)
