"""The basic-auth users file: ``basic_auth_users`` mapping user names to bcrypt hashes.

It uses the same key as the Prometheus exporter-toolkit web config, so one file can serve both.
"""

from __future__ import annotations

from pathlib import Path

import bcrypt

from exporter.model.errors import ConfigError
from guardian_common.files import read_text
from guardian_common.yamldoc import parse_yaml


def load_users(path: Path) -> dict[str, bytes]:
    source = str(path)
    doc = parse_yaml(read_text(path, what="users file"), source)
    data = doc.data
    if not isinstance(data, dict) or set(data) != {"basic_auth_users"}:
        raise ConfigError(
            "expected one key, basic_auth_users: {user: bcrypt hash}", path=source, line=1
        )
    users = data["basic_auth_users"]
    if not isinstance(users, dict) or not users:
        raise doc.error("must map user names to bcrypt hashes", ("basic_auth_users",))
    out: dict[str, bytes] = {}
    for name, hashed in users.items():
        where = ("basic_auth_users", name)
        if not isinstance(hashed, str):
            raise doc.error("the hash must be a string", where, f"basic_auth_users.{name}")
        if not hashed.startswith(("$2a$", "$2b$", "$2y$")):
            raise doc.error("not a bcrypt hash ($2b$...)", where, f"basic_auth_users.{name}")
        out[name] = hashed.encode()
    return out


def check_password(hashed: bytes, password: str) -> bool:
    try:
        return bcrypt.checkpw(password.encode(), hashed)
    except ValueError:
        return False
