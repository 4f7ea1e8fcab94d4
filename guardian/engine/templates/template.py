"""Parsing and expanding alert templates as Prometheus 2.42 does."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from guardian.engine.templates import nodes as n
from guardian.engine.templates.builtins import BUILTINS
from guardian.engine.templates.errors import BreakLoop, ContinueLoop, ExecError
from guardian.engine.templates.interpreter import State
from guardian.engine.templates.parser import parse
from guardian.engine.templates.promfuncs import FUNCTION_NAMES, prometheus_functions
from guardian.engine.templates.values import QuerySample, TemplateData

logger = logging.getLogger(__name__)

QueryFunc = Callable[[str], Sequence[QuerySample]]

# What Prometheus puts in front of every alert label and annotation template.
ALERT_PREAMBLE = (
    "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}"
    "{{$externalURL := .ExternalURL}}{{$value := .Value}}"
)

_KNOWN_FUNCTIONS = frozenset(BUILTINS) | FUNCTION_NAMES


@dataclass(frozen=True)
class TemplateContext:
    """What one expansion sees: the alert's labels and value, and the server's settings."""

    labels: Mapping[str, str]
    value: float
    external_labels: Mapping[str, str] = field(default_factory=dict)
    external_url: str = ""
    query: QueryFunc | None = None  # None: `query` fails with an expansion error


class Template:
    """A parsed template. Build it with :func:`parse_template`."""

    def __init__(self, name: str, text: str, root: n.ListNode, defs: dict[str, n.ListNode]):
        self.name = name
        self.text = text
        self._root = root
        self._defs = defs

    def execute(self, ctx: TemplateContext) -> str:
        """Expand, raising :class:`ExecError` (Go's message) when execution fails."""
        funcs = dict(BUILTINS)
        funcs.update(prometheus_functions(ctx.query, ctx.external_url))
        data = TemplateData(
            labels=dict(ctx.labels),
            external_labels=dict(ctx.external_labels),
            external_url=ctx.external_url,
            value=float(ctx.value),
        )
        state = State(self.name, self.text, funcs, self._defs)
        state.vars.append(("$", data))
        try:
            state.walk(data, self._root)
        except (BreakLoop, ContinueLoop):  # pragma: no cover - the parser rejects these
            raise state.errorf("break or continue outside range") from None
        return "".join(state.out)

    def expand(self, ctx: TemplateContext) -> str:
        """Expand; on failure return ``<error expanding template: …>`` as Prometheus does."""
        try:
            return self.execute(ctx)
        except ExecError as exc:
            reason = f"error executing template {self.name}: {exc}"
        except RecursionError:
            reason = f"error executing template {self.name}: template nests too deeply"
        except Exception as exc:  # a bug here must not take the alert down with it
            logger.exception("Unexpected failure expanding template %s", self.name)
            reason = f"panic expanding template {self.name}: {exc}"
        logger.warning("Expanding template %s failed: %s", self.name, reason)
        return f"<error expanding template: {reason}>"


def parse_template(text: str, name: str = "", *, preamble: bool = True) -> Template:
    """Parse ``text`` (raises :class:`TemplateParseError`).

    With ``preamble`` (the default) the text gets Prometheus's variable definitions in front,
    so ``$labels``, ``$value``, ``$externalLabels`` and ``$externalURL`` work; reported parse
    columns still count from the start of ``text``. Prometheus names a rule's templates
    ``__alert_<alertname>`` (see :func:`parse_alert_template`); the name shows in error text.
    """
    full = ALERT_PREAMBLE + text if preamble else text
    offset = len(ALERT_PREAMBLE.encode()) if preamble else 0
    root, defs = parse(full, name, _KNOWN_FUNCTIONS, offset)
    return Template(name, full, root, defs)


def parse_alert_template(text: str, alert_name: str) -> Template:
    """Parse a label or annotation template of alerting rule ``alert_name``."""
    return parse_template(text, f"__alert_{alert_name}")


def expand_template(text: str, ctx: TemplateContext, name: str = "") -> str:
    """Parse and expand in one step; a parse error is returned the way Prometheus reports it."""
    from guardian.engine.templates.errors import TemplateParseError

    try:
        template = parse_template(text, name)
    except TemplateParseError as exc:
        return f"<error expanding template: error parsing template {name}: {exc}>"
    return template.expand(ctx)
