"""Edited files are noticed by content, through a ConfigMap volume's symlink swap."""

from __future__ import annotations

import os
import time
from pathlib import Path

from guardian.app.config_watch import ConfigWatch, fingerprint
from tests.helpers import write_configmap_volume


def test_a_configmap_swap_is_a_change_once(tmp_path: Path) -> None:
    volume = tmp_path / "rules"
    write_configmap_volume(volume, {"a.yaml": "one"})
    watch = ConfigWatch([str(volume / "*.yaml"), str(tmp_path / "guardian.yaml")])
    assert not watch.changed()

    link_before = (volume / "a.yaml").lstat()
    write_configmap_volume(volume, {"a.yaml": "two"})
    assert (volume / "a.yaml").lstat().st_mtime_ns == link_before.st_mtime_ns  # the link stays
    assert watch.changed()
    assert not watch.changed()

    write_configmap_volume(volume, {"a.yaml": "two"})  # a new generation, same content
    assert not watch.changed()


def test_added_removed_and_edited_files_are_changes(tmp_path: Path) -> None:
    config = tmp_path / "guardian.yaml"
    config.write_text("x: 1\n")
    watch = ConfigWatch([str(config), str(tmp_path / "policies" / "*.yaml")])

    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "p.yaml").write_text("kind: ReclaimPolicy\n")
    assert watch.changed()  # a file the glob matches now
    config.write_text("x: 2\n")
    assert watch.changed()
    config.unlink()
    assert watch.changed()  # gone: unreadable is a state too
    assert not watch.changed()


def test_watching_other_patterns_starts_from_their_current_content(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("a")
    second.write_text("b")
    watch = ConfigWatch([str(first)])
    watch.watch([str(first), str(second)])
    assert not watch.changed()
    second.write_text("c")
    assert watch.changed()


def test_a_fifo_or_dev_zero_matching_a_pattern_is_never_read(tmp_path: Path) -> None:
    """Unreadable, so a change (the reload refuses it); the poll neither blocks on the
    FIFO nor reads /dev/zero (it once took 3.9 GB in 2 s)."""
    (tmp_path / "a.yaml").write_text("groups: []\n")
    watch = ConfigWatch([str(tmp_path / "*.yaml")])
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    started = time.monotonic()
    assert watch.changed()
    assert not watch.changed()
    assert time.monotonic() - started < 1.0
    assert fingerprint([str(tmp_path / "*.yaml")]) == {
        str(tmp_path / "a.yaml"): fingerprint([str(tmp_path / "a.yaml")])[str(tmp_path / "a.yaml")],
        str(tmp_path / "fifo.yaml"): None,
        str(tmp_path / "zero.yaml"): None,
    }


def test_a_file_over_the_limit_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_bytes(b"#" * 2048)
    assert fingerprint([str(path)], max_bytes=2048)[str(path)] is not None
    assert fingerprint([str(path)], max_bytes=2047)[str(path)] is None
    watch = ConfigWatch([str(path)], max_bytes=2048)
    watch.watch([str(path)], max_bytes=2047)  # a smaller limit: watched from its view now
    assert not watch.changed()
