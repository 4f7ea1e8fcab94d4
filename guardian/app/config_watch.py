"""Notice edits of the config, rule and policy files by their content.

Kubernetes updates a ConfigMap volume by writing a new timestamped directory and
swapping the ``..data`` symlink: the mounted paths stay, and their own mtime and inode
(those of the symlinks) never change. So every poll reads each file the patterns match
now, through the symlinks (the resolved target), and hashes it; a different set of files
or any different content is a change. The files are small, the polls seconds apart.
"""

from __future__ import annotations

import glob
import hashlib
from collections.abc import Sequence
from pathlib import Path

Fingerprint = dict[str, str | None]  # path -> sha256 of its content (None: unreadable)


def fingerprint(patterns: Sequence[str]) -> Fingerprint:
    out: Fingerprint = {}
    for pattern in patterns:
        paths = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        for path in paths:
            out[path] = _digest(path)
    return out


def _digest(path: str) -> str | None:
    try:
        data = Path(path).read_bytes()  # follows the symlinks to the current target
    except OSError:
        return None
    return hashlib.sha256(data).hexdigest()


class ConfigWatch:
    """``changed()`` is True once per change of the watched files' content."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = list(patterns)
        self._seen = fingerprint(self.patterns)

    def changed(self) -> bool:
        now = fingerprint(self.patterns)
        if now == self._seen:
            return False
        # Seen now, before the reload reads the files: an edit made while it reads
        # shows as a change at the next poll instead of being lost.
        self._seen = now
        return True

    def watch(self, patterns: Sequence[str]) -> None:
        """Watch ``patterns`` from now on (a reload changed which files count)."""
        if list(patterns) != self.patterns:
            self.patterns = list(patterns)
            self._seen = fingerprint(self.patterns)
