"""Where runbook links point: one base for the rule files and for Slack.

The shipped rule files carry ``runbook_url: <RUNBOOK_BASE><alertname in lower case>``
(``RUNBOOK_URL_PATTERN`` written out). Slack links the same address by default; one
pattern moves both: ``guardian rules render --runbook-url-pattern P`` for the rule files
and ``slack.runbook_url_pattern: P`` for the messages (docs/runbooks/README.md)."""

from __future__ import annotations

RUNBOOK_BASE = "https://gpu-guardian.io/runbooks/"
RUNBOOK_URL_PATTERN = RUNBOOK_BASE + "{alertname_lower}"
# The pages themselves, in the GPU Guardian repository (docs/runbooks/): one choice of
# pattern for both, e.g. for a fork.
REPOSITORY_RUNBOOKS = (
    "https://github.com/gpu-guardian/gpu-guardian/blob/main/docs/runbooks/{alertname_lower}.md"
)
