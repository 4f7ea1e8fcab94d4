"""Go ``text/template`` as Prometheus alerting rules use it, with Prometheus 2.42's functions.

Pure code: the ``query`` function is injected through :class:`TemplateContext`.
"""

from guardian.engine.templates.errors import ExecError, TemplateParseError
from guardian.engine.templates.template import (
    ALERT_PREAMBLE,
    QueryFunc,
    Template,
    TemplateContext,
    expand_template,
    parse_alert_template,
    parse_template,
)
from guardian.engine.templates.values import QuerySample

__all__ = [
    "ALERT_PREAMBLE",
    "ExecError",
    "QueryFunc",
    "QuerySample",
    "Template",
    "TemplateContext",
    "TemplateParseError",
    "expand_template",
    "parse_alert_template",
    "parse_template",
]
