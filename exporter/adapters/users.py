"""The basic-auth users file: ``basic_auth_users`` mapping user names to bcrypt hashes.

It uses the same key as the Prometheus exporter-toolkit web config, so one file can serve both.
"""

from __future__ import annotations

from pathlib import Path

import bcrypt
import yaml

from exporter.model.errors import ConfigError


def load_users(path: Path) -> dict[str, bytes]:
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read users file: {exc.strerror}", path=str(path)) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML: {exc}", path=str(path)) from exc
    if not isinstance(data, dict) or set(data) != {"basic_auth_users"}:
        raise ConfigError("expected one key, basic_auth_users: {user: bcrypt hash}", path=str(path))
    users = data["basic_auth_users"]
    if not isinstance(users, dict) or not users:
        raise ConfigError(
            "must map user names to bcrypt hashes", path=str(path), field="basic_auth_users"
        )
    out: dict[str, bytes] = {}
    for name, hashed in users.items():
        field = f"basic_auth_users.{name}"
        if not isinstance(name, str) or not isinstance(hashed, str):
            raise ConfigError("user and hash must be strings", path=str(path), field=field)
        if not hashed.startswith(("$2a$", "$2b$", "$2y$")):
            raise ConfigError("not a bcrypt hash ($2b$...)", path=str(path), field=field)
        out[name] = hashed.encode()
    return out


def check_password(hashed: bytes, password: str) -> bool:
    try:
        return bcrypt.checkpw(password.encode(), hashed)
    except ValueError:
        return False
