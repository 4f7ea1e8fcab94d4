"""Go regexps run on RE2 only: Python's ``re`` no longer stands in for Go's ``regexp``.

Python's ``re`` backtracks (exponential time on ``(a|aa)+b``) and reads another syntax, so
a translation from Go's syntax to it is gone. These checks keep it gone: the modules that
handle Go regexps do not import ``re``, and no product module hands ``re`` a pattern that is
not written in its own source, unless it is listed below with its reason.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
PRODUCT = ("guardian", "exporter", "guardian_common")

# Modules that compile, match or quote patterns from rules, templates or settings as Go
# does (the PromQL parser and type checker hand theirs to promql/regexps.py).
GO_REGEXP_MODULES = (
    "guardian/engine/golang/regexp.py",
    "guardian/engine/golang/regexp_syntax.py",
    "guardian/engine/promql/regexps.py",
    "guardian/engine/alertmanager/relabel.py",
    "guardian/engine/alertmanager/suppression.py",
    "guardian/engine/templates/promfuncs.py",
    "guardian/app/settings/alertmanager_output.py",
)

# (module, pattern argument) -> why Python's re is right there.
NOT_GO_REGEXPS = {
    ("guardian/model/policies_windows.py", "WINDOW_PATTERN"): "a literal of the module, "
    "also the CRD's OpenAPI pattern",
    ("guardian_common/grouping.py", "regex"): "the exporter's own groupLabelAllowlistRegex, "
    "documented and applied in Python",
    ("guardian/app/simulate/reclaimed_usage.py", "pod_pattern(ref)"): "pod-name patterns built "
    "from re.escape'd names and fixed classes, matched on the simulator's own data",
}
_RE_FUNCTIONS = {"compile", "search", "match", "fullmatch", "sub", "subn", "split", "findall"}


def _imports_re(tree: ast.Module) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if (isinstance(node, ast.Import) and any(a.name == "re" for a in node.names))
        or (isinstance(node, ast.ImportFrom) and node.module == "re")
    ]


def _written_here(node: ast.expr) -> bool:
    """A pattern spelled out in the source: a string, or an f-string of such parts."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return all(
            isinstance(v, ast.Constant)
            or (isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name))
            for v in node.values
        )
    if isinstance(node, ast.BinOp):
        return _written_here(node.left) and _written_here(node.right)
    return False


def _dynamic_patterns(tree: ast.Module) -> list[str]:
    return [
        ast.unparse(node.args[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "re"
        and node.func.attr in _RE_FUNCTIONS
        and node.args
        and not _written_here(node.args[0])
    ]


def _product_modules() -> list[Path]:
    return sorted(p for package in PRODUCT for p in (ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("module", GO_REGEXP_MODULES)
def test_the_modules_that_handle_go_regexps_do_not_import_re(module: str) -> None:
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    assert _imports_re(tree) == [], f"{module} imports Python's re"


def test_no_product_module_gives_re_a_pattern_from_elsewhere() -> None:
    found = {
        (str(path.relative_to(ROOT)), pattern)
        for path in _product_modules()
        for pattern in _dynamic_patterns(ast.parse(path.read_text(encoding="utf-8")))
    }
    assert found - NOT_GO_REGEXPS.keys() == set(), "route Go regexps through golang.regexp"
    assert NOT_GO_REGEXPS.keys() - found == set(), "an exception listed here is gone"


def test_the_translation_to_re_is_gone() -> None:
    assert importlib.util.find_spec("guardian.engine.templates.goregexp") is None
    for path in _product_modules():
        names = {
            node.name
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.FunctionDef)
        }
        assert not names & {"compile_go", "_translate"}, path


def test_go_regexps_are_re2_programs() -> None:
    from guardian.engine.golang.regexp import compile_regexp

    regexp = compile_regexp("a+")
    assert type(regexp._re).__module__ == "re2"  # the google-re2 binding
