"""The environment variables Kubernetes injects for Services ("service links").

For every Service in a pod's namespace the kubelet sets, e.g. for ``guardian`` on TCP 9469:

    GUARDIAN_SERVICE_HOST=10.0.0.11        GUARDIAN_SERVICE_PORT=9469
    GUARDIAN_SERVICE_PORT_HTTP=9469        (one per named port)
    GUARDIAN_PORT=tcp://10.0.0.11:9469     GUARDIAN_PORT_9469_TCP=tcp://10.0.0.11:9469
    GUARDIAN_PORT_9469_TCP_PROTO=tcp       GUARDIAN_PORT_9469_TCP_PORT=9469
    GUARDIAN_PORT_9469_TCP_ADDR=10.0.0.11

A Service named like our programs would otherwise turn into settings overrides the user
never wrote (and, for ``GUARDIAN_PORT``, a setting that does not exist). Both programs
skip these forms when they read ``GUARDIAN_*`` overrides.
"""

from __future__ import annotations

import re

_SERVICE = re.compile(r"^[A-Z0-9_]+_SERVICE_(HOST|PORT|PORT_[A-Z0-9_]+)$")
_PORT_N = re.compile(r"^[A-Z0-9_]+_PORT_[0-9]+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?$")
# GUARDIAN_PORT could be a setting one day: only the URL form is a service link.
_PORT_URL = re.compile(r"^(tcp|udp|sctp)://\S+:[0-9]+$")


def is_service_link(name: str, value: str) -> bool:
    """True if ``name=value`` has the form of a variable Kubernetes injects for a Service."""
    if _SERVICE.match(name) or _PORT_N.match(name):
        return True
    return name.endswith("_PORT") and _PORT_URL.match(value) is not None
