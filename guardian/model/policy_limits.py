"""Size limits of a ReclaimPolicy's spec, the same in the pydantic model and the CRD.

Every string has a longest length and every list and map a largest count, so a policy
is bounded whatever is written in it: at most about 430 KiB of spec (a unit test
computes the worst case from the CRD schema and keeps it under 512 KiB), where the API
server alone would take objects of 1-2 MiB, and the controller would hold and validate
all of it again on every watch event.
The limits are far beyond what a policy needs: a selector that lists 64 values, a scope
that names 128 namespaces.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

from guardian.model.policies_windows import ActiveWindow

MAX_NAME = 253
"""A DNS subdomain: an object or namespace name, a kind."""
MAX_LABEL_KEY = 317
"""A label key: a 253-byte prefix, ``/``, a 63-byte name."""
MAX_LABEL_VALUE = 63
"""A Kubernetes label value, what a selector can match."""
MAX_TEXT = 1024
"""Alert names and alert label values (Prometheus sets no limit)."""
MAX_WINDOW = 256
"""An active window, ``Mon-Fri 07:30-20:30 Europe/Berlin``."""
MAX_DURATION_TEXT = 64
"""A duration written as text, ``1h30m``."""

MAX_NAMESPACES = 128
"""Namespaces listed in a scope or in the exclusions."""
MAX_ALERT_NAMES = 64
MAX_KINDS = 16
MAX_WINDOWS = 16
MAX_LABELS = 32
"""Entries of one ``matchLabels``."""
MAX_EXPRESSIONS = 16
"""``matchExpressions`` of one selector."""
MAX_VALUES = 64
"""``values`` of one selector requirement."""

Name = Annotated[str, StringConstraints(max_length=MAX_NAME)]
LabelKey = Annotated[str, StringConstraints(max_length=MAX_LABEL_KEY)]
LabelValue = Annotated[str, StringConstraints(max_length=MAX_LABEL_VALUE)]
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT)]
Window = Annotated[ActiveWindow, StringConstraints(max_length=MAX_WINDOW)]
