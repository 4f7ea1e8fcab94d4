"""The README's two commands are the ones CI and users run."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_gives_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Two commands", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]


def test_ci_runs_the_readme_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "make test" in [line.strip() for line in script]
    assert any("ensure-prometheus" in line for line in script)


# A file name says its role. Names shared only by modules that play that same role in
# parallel packages (each package's errors, self-metrics, HTTP server, wire framing,
# fault injection, the pipeline's build step, or a language's lexer and parser).
PARALLEL_ROLES = {
    "__init__.py",
    "__main__.py",
    "errors.py",
    "metrics.py",
    "server.py",
    "wire.py",
    "faults.py",
    "build.py",
    "lexer.py",
    "parser.py",
}


def test_no_two_modules_share_a_name_unless_they_share_a_role() -> None:
    seen: dict[str, list[str]] = {}
    for package in ("guardian", "exporter", "guardian_common"):
        for path in sorted((ROOT / package).rglob("*.py")):
            seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    shared = {
        name: paths for name, paths in seen.items() if len(paths) > 1 and name not in PARALLEL_ROLES
    }
    assert shared == {}
