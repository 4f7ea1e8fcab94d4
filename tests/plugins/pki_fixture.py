"""A throwaway PKI (``openssl``) for tests of TLS clients: a CA, a server certificate for
127.0.0.1 and a client certificate."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(command: str, cwd: Path) -> None:
    subprocess.run(["openssl", *command.split()], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A throwaway CA with a server certificate for 127.0.0.1 and a client certificate."""
    root = tmp_path_factory.mktemp("pki")
    key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
    _openssl(f"req -x509 {key} -keyout ca.key -out ca.pem -days 2 -subj /CN=test-ca", root)
    for name, extension in (
        ("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth"),
        ("client", "extendedKeyUsage=clientAuth"),
    ):
        (root / f"{name}.ext").write_text(extension + "\n")
        _openssl(f"req {key} -keyout {name}.key -out {name}.csr -subj /CN={name}", root)
        _openssl(
            f"x509 -req -in {name}.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
            f" -out {name}.pem -days 2 -extfile {name}.ext",
            root,
        )
    return Pki(
        ca=root / "ca.pem",
        server_cert=root / "server.pem",
        server_key=root / "server.key",
        client_cert=root / "client.pem",
        client_key=root / "client.key",
    )
