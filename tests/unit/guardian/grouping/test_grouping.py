from __future__ import annotations

import pytest

from guardian_common.grouping import (
    GroupingError,
    GroupingOptions,
    default_allowlist,
    plan_label_keys,
    quote_meta,
    sanitize_label_key,
)


@pytest.mark.parametrize(
    ("key", "name"),
    [
        ("prjId", "prjId"),
        ("app.kubernetes.io/part-of", "app_kubernetes_io_part_of"),
        ("team-id", "team_id"),
        ("9lives", "_9lives"),
        ("a/b.c-d_e", "a_b_c_d_e"),
    ],
)
def test_sanitize_matches_dcgm_exporter_and_fixes_leading_digit(key: str, name: str) -> None:
    assert sanitize_label_key(key) == name


@pytest.mark.parametrize(
    ("label", "regex"),
    [("prjId", "^(prjId)$"), ("app.kubernetes.io/team", r"^(app\.kubernetes\.io/team)$")],
)
def test_default_allowlist_is_anchored_and_escaped_like_go(label: str, regex: str) -> None:
    assert default_allowlist(label) == regex


def test_quote_meta_escapes_only_re2_metacharacters() -> None:
    assert quote_meta(r"a.b+c*d?e(f)g|h[i]j{k}l^m$n\o/p-q") == (
        r"a\.b\+c\*d\?e\(f\)g\|h\[i\]j\{k\}l\^m\$n\\o/p-q"
    )


def test_allowlist_is_anchored_against_the_raw_key() -> None:
    options = GroupingOptions(group_label="prjId", allowlist_regex="prjId|team")

    assert options.allows("prjId")
    assert options.allows("team")
    assert not options.allows("prjIdX")
    assert not options.allows("my-team")


def test_default_allowlist_exports_only_the_group_label() -> None:
    options = GroupingOptions(group_label="app.kubernetes.io/team")

    assert options.allows("app.kubernetes.io/team")
    assert not options.allows("appXkubernetesXio/team")
    assert options.group_label_name == "app_kubernetes_io_team"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"group_label": ""}, "groupLabel: must not be empty"),
        ({"group_label": "bad key!"}, "not a valid Kubernetes label key"),
        ({"group_label": "pod"}, "reserved label 'pod'"),
        ({"group_label": "prjId", "allowlist_regex": "^team$"}, "does not match the group label"),
        ({"group_label": "prjId", "allowlist_regex": "(("}, "does not compile"),
        ({"group_label": "prjId", "default_group": ""}, "defaultGroup: must not be empty"),
    ],
)
def test_invalid_options_name_the_option(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(GroupingError, match=message):
        GroupingOptions(**kwargs)


def test_pods_without_the_label_get_the_default_bucket() -> None:
    options = GroupingOptions(group_label="prjId", default_group="nobody")

    assert options.group_of({"prjId": "p1", "x": "y"}) == "p1"
    assert options.group_of({"x": "y"}) == "nobody"
    assert options.group_of({"prjId": ""}) == "nobody"


def test_colliding_keys_are_all_withheld_and_reserved_keys_refused() -> None:
    options = GroupingOptions(group_label="prjId", allowlist_regex=".*")

    plan = plan_label_keys(["team.id", "team-id", "prjId", "pod", "namespace", "ok"], options)

    assert plan.names == {"prjId": "prjId", "ok": "ok"}
    assert plan.collisions == {"team_id": ("team-id", "team.id")}
    assert plan.reserved == ("namespace", "pod")


def test_keys_outside_the_allowlist_are_ignored() -> None:
    plan = plan_label_keys(["prjId", "secret"], GroupingOptions(group_label="prjId"))
    assert plan.names == {"prjId": "prjId"}
    assert not plan.collisions
