"""Notice edits of the config, rule and policy files by their content.

Kubernetes updates a ConfigMap volume by writing a new timestamped directory and
swapping the ``..data`` symlink: the mounted paths stay, and their own mtime and inode
(those of the symlinks) never change. So every poll reads each file the patterns match
now, through the symlinks (the resolved target), and hashes it; a different set of files
or any different content is a change. The files are small, the polls seconds apart.

Each file is read as the loaders read it (:func:`guardian_common.files.read_regular_file`):
a FIFO, a device such as ``/dev/zero`` or an oversized file matching a pattern is never
read, only noted as unreadable, so the poll never blocks or fills the memory; the reload
it triggers then refuses that file and keeps the running config.
"""

from __future__ import annotations

import glob
import hashlib
from collections.abc import Sequence

from guardian_common.files import MAX_FILE_BYTES, read_regular_file

Fingerprint = dict[str, str | None]  # path -> sha256 of its content (None: unreadable)


def fingerprint(patterns: Sequence[str], max_bytes: int = MAX_FILE_BYTES) -> Fingerprint:
    out: Fingerprint = {}
    for pattern in patterns:
        paths = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        for path in paths:
            out[path] = _digest(path, max_bytes)
    return out


def _digest(path: str, max_bytes: int) -> str | None:
    try:
        # Follows the symlinks to the current target; a regular file of at most
        # max_bytes, opened without blocking (OSError: unsafe or unreadable).
        data = read_regular_file(path, max_bytes)
    except OSError:
        return None
    return hashlib.sha256(data).hexdigest()


class ConfigWatch:
    """``changed()`` is True once per change of the watched files' content. A file
    larger than ``max_bytes`` (the largest any watched file may be) counts as
    unreadable."""

    def __init__(self, patterns: Sequence[str], max_bytes: int = MAX_FILE_BYTES) -> None:
        self.patterns = list(patterns)
        self.max_bytes = max_bytes
        self._seen = fingerprint(self.patterns, max_bytes)

    def changed(self) -> bool:
        now = fingerprint(self.patterns, self.max_bytes)
        if now == self._seen:
            return False
        # Seen now, before the reload reads the files: an edit made while it reads
        # shows as a change at the next poll instead of being lost.
        self._seen = now
        return True

    def watch(self, patterns: Sequence[str], max_bytes: int | None = None) -> None:
        """Watch ``patterns`` from now on (a reload changed which files count, or how
        large they may be)."""
        limit = self.max_bytes if max_bytes is None else max_bytes
        if list(patterns) != self.patterns or limit != self.max_bytes:
            self.patterns = list(patterns)
            self.max_bytes = limit
            self._seen = fingerprint(self.patterns, limit)
