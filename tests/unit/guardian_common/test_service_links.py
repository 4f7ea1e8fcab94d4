"""The variables Kubernetes injects for Services are recognised by their form."""

from __future__ import annotations

import pytest

from guardian_common.service_links import is_service_link


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GUARDIAN_SERVICE_HOST", "10.0.0.11"),
        ("GUARDIAN_SERVICE_PORT", "9469"),
        ("GUARDIAN_SERVICE_PORT_HTTP_METRICS", "9469"),
        ("GUARDIAN_PORT", "tcp://10.0.0.11:9469"),
        ("GUARDIAN_EXPORTER_PORT", "tcp://[fd00::11]:9400"),
        ("GUARDIAN_PORT_9469_TCP", "tcp://10.0.0.11:9469"),
        ("GUARDIAN_PORT_9469_TCP_PROTO", "tcp"),
        ("GUARDIAN_PORT_9469_TCP_PORT", "9469"),
        ("GUARDIAN_PORT_9469_TCP_ADDR", "10.0.0.11"),
        ("GUARDIAN_PORT_53_UDP_ADDR", "10.0.0.11"),
        ("GUARDIAN_PORT_9_SCTP", "sctp://10.0.0.11:9"),
    ],
)
def test_service_link_forms(name: str, value: str) -> None:
    assert is_service_link(name, value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GUARDIAN_EXPORTER_PORT", "9400"),  # a real setting
        ("GUARDIAN_PORT", "9469"),  # not a setting, but not a service link either
        ("GUARDIAN_PROMETHEUS__URL", "tcp://p:9090"),
        ("GUARDIAN_LISTEN_ADDRESS", "0.0.0.0:9469"),
        ("GUARDIAN_PORT_X_TCP", "tcp://10.0.0.11:9469"),
    ],
)
def test_settings_are_not_service_links(name: str, value: str) -> None:
    assert not is_service_link(name, value)
