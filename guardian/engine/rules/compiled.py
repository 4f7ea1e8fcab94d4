"""An alerting rule ready to evaluate: its templates parsed once, its query text as
Prometheus prints it, and the memo of its expansions. Shared by the state machine
(alerting.py) and the template expansion (expansion.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from guardian.engine.promql import PromQLError, printed
from guardian.engine.templates import QuerySample, Template, parse_alert_template
from guardian.model.labels import LabelSet
from guardian.model.rules import AlertingRule

TemplateQuery = Callable[[str], Sequence[QuerySample]]


@dataclass(frozen=True)
class TemplateEnv:
    external_labels: Mapping[str, str]
    external_url: str = ""

    def __post_init__(self) -> None:
        # A LabelSet keeps it hashable: the env is part of the template memo key.
        object.__setattr__(self, "external_labels", LabelSet(self.external_labels))


# The `query` calls of one expansion, in order, with their answers; None if one failed
# (its error is in the text, so the expansion is never reused).
QueryLog = tuple[tuple[str, Sequence[QuerySample]], ...] | None
# Per sample's labels: the value and env it was expanded with, what that gave, and the
# template queries it made.
MemoEntry = tuple[float, TemplateEnv, LabelSet, LabelSet, QueryLog]


def query_text(expr: str) -> str:
    """The text to query for a rule's ``expr``: as Prometheus prints it (and so evaluates
    it, ``r.vector.String()``), or as written if it does not parse (the loader refuses
    such rules; a rule built in code may still carry one)."""
    try:
        return printed(expr)
    except PromQLError:
        return expr


@dataclass(frozen=True)
class CompiledAlertingRule:
    """A rule with its label and annotation templates parsed once.

    A value without ``{{`` is kept as plain text: nothing to expand. Expansion is a pure
    function of the sample's labels and value, the external labels and, for templates
    that call ``query``, the answers to those queries, so its result is memoised from
    one evaluation to the next: with ``query`` calls, they are asked again and the
    result is reused when every answer is the same. ``query`` is the expression as
    evaluated.
    """

    rule: AlertingRule
    query: str
    labels: tuple[tuple[str, Template | str], ...]
    annotations: tuple[tuple[str, Template | str], ...]
    static: bool = False
    uses_query: bool = False
    memo: dict[LabelSet, MemoEntry] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def compile(cls, rule: AlertingRule) -> CompiledAlertingRule:
        def parse(items: Mapping[str, str]) -> tuple[tuple[str, Template | str], ...]:
            return tuple(
                (k, parse_alert_template(v, rule.name) if "{{" in v else v)
                for k, v in items.items()
            )

        labels, annotations = parse(rule.labels), parse(rule.annotations)
        templated = [p for _, p in labels + annotations if not isinstance(p, str)]
        uses_query = any("query" in t.text for t in templated)
        return cls(
            rule,
            query_text(rule.expr),
            labels,
            annotations,
            static=not templated,
            uses_query=uses_query,
        )
