"""Edited files are noticed by content, through a ConfigMap volume's symlink swap."""

from __future__ import annotations

from pathlib import Path

from guardian.app.config_watch import ConfigWatch
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
