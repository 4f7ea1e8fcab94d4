"""Pure semantics of the fake API: patches, selectors and validation (no server)."""

from __future__ import annotations

from typing import Any

import pytest

from guardian.sim.kubeapi.errors import ApiError
from guardian.sim.kubeapi.patch import (
    apply_patch,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from guardian.sim.kubeapi.selectors import (
    compile_filter,
    parse_label_selector,
    selector_to_string,
)

# RFC 7386 Appendix A, every example.
RFC7386_VECTORS: list[tuple[Any, Any, Any]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC7386_VECTORS)
def test_merge_patch_matches_rfc7386(target: Any, patch: Any, expected: Any) -> None:
    assert merge_patch(target, patch) == expected


def test_merge_patch_does_not_mutate_its_inputs() -> None:
    target = {"metadata": {"annotations": {"a": "1"}}}
    patch = {"metadata": {"annotations": {"b": "2"}}}
    merge_patch(target, patch)["metadata"]["annotations"]["c"] = "3"
    assert target == {"metadata": {"annotations": {"a": "1"}}}
    assert patch == {"metadata": {"annotations": {"b": "2"}}}


RFC6902_DOC = {"foo": "bar", "baz": ["a", "c"], "a/b": 1, "m~n": 2}


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        ([{"op": "add", "path": "/qux", "value": 1}], {**RFC6902_DOC, "qux": 1}),
        (
            [{"op": "add", "path": "/baz/1", "value": "b"}],
            {**RFC6902_DOC, "baz": ["a", "b", "c"]},
        ),
        ([{"op": "add", "path": "/baz/-", "value": "d"}], {**RFC6902_DOC, "baz": ["a", "c", "d"]}),
        ([{"op": "remove", "path": "/baz/0"}], {**RFC6902_DOC, "baz": ["c"]}),
        ([{"op": "replace", "path": "/foo", "value": 9}], {**RFC6902_DOC, "foo": 9}),
        ([{"op": "remove", "path": "/a~1b"}], {k: v for k, v in RFC6902_DOC.items() if k != "a/b"}),
        ([{"op": "replace", "path": "/m~0n", "value": 3}], {**RFC6902_DOC, "m~n": 3}),
        (
            [{"op": "move", "from": "/foo", "path": "/moved"}],
            {**{k: v for k, v in RFC6902_DOC.items() if k != "foo"}, "moved": "bar"},
        ),
        ([{"op": "copy", "from": "/baz/0", "path": "/first"}], {**RFC6902_DOC, "first": "a"}),
        ([{"op": "test", "path": "/baz", "value": ["a", "c"]}], RFC6902_DOC),
    ],
)
def test_json_patch_operations(ops: list[dict[str, Any]], expected: Any) -> None:
    assert json_patch(RFC6902_DOC, ops) == expected


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "test", "path": "/foo", "value": "nope"}],
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/missing", "value": 1}],
        [{"op": "add", "path": "/baz/7", "value": 1}],
        [{"op": "add", "path": "no-slash", "value": 1}],
        [{"op": "frobnicate", "path": "/foo"}],
        [{"op": "add", "path": "/x"}],
    ],
)
def test_json_patch_rejects_bad_operations_with_422(ops: list[dict[str, Any]]) -> None:
    with pytest.raises(ApiError) as caught:
        json_patch(RFC6902_DOC, ops)
    assert caught.value.code == 422


def test_json_patch_is_all_or_nothing() -> None:
    doc = {"a": 1}
    with pytest.raises(ApiError):
        json_patch(doc, [{"op": "add", "path": "/b", "value": 2}, {"op": "remove", "path": "/z"}])
    assert doc == {"a": 1}


def test_strategic_merge_merges_containers_by_name_and_replaces_primitive_lists() -> None:
    target = {
        "spec": {
            "containers": [
                {"name": "a", "image": "a:1", "args": ["x", "y"]},
                {"name": "b", "image": "b:1"},
            ]
        }
    }
    patch = {"spec": {"containers": [{"name": "b", "image": "b:2"}, {"name": "c", "image": "c"}]}}
    result = strategic_merge_patch(target, patch)
    assert result["spec"]["containers"] == [
        {"name": "a", "image": "a:1", "args": ["x", "y"]},
        {"name": "b", "image": "b:2"},
        {"name": "c", "image": "c"},
    ]
    args = strategic_merge_patch(target, {"spec": {"containers": [{"name": "a", "args": ["z"]}]}})
    assert args["spec"]["containers"][0]["args"] == ["z"]


def test_strategic_merge_directives() -> None:
    target = {
        "metadata": {"annotations": {"a": "1", "b": "2"}, "finalizers": ["x", "y"]},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
    }
    result = strategic_merge_patch(
        target,
        {
            "metadata": {
                "annotations": {"a": None, "c": "3"},
                "$deleteFromPrimitiveList/finalizers": ["x"],
                "$setElementOrder/finalizers": ["y"],
            },
            "spec": {"containers": [{"name": "a", "$patch": "delete"}]},
        },
    )
    assert result["metadata"] == {"annotations": {"b": "2", "c": "3"}, "finalizers": ["y"]}
    assert result["spec"]["containers"] == [{"name": "b"}]
    replaced = strategic_merge_patch(target, {"metadata": {"$patch": "replace", "name": "n"}})
    assert replaced["metadata"] == {"name": "n"}
    unioned = strategic_merge_patch(target, {"metadata": {"finalizers": ["y", "z"]}})
    assert unioned["metadata"]["finalizers"] == ["x", "y", "z"]


def test_strategic_merge_requires_the_merge_key() -> None:
    with pytest.raises(ApiError) as caught:
        strategic_merge_patch({"spec": {"containers": []}}, {"spec": {"containers": [{"x": 1}]}})
    assert caught.value.code == 422


def test_custom_resources_refuse_strategic_merge_with_415() -> None:
    with pytest.raises(ApiError) as caught:
        apply_patch("application/strategic-merge-patch+json", {}, {}, custom=True)
    assert caught.value.code == 415
    with pytest.raises(ApiError) as unknown:
        apply_patch("application/apply-patch+yaml", {}, {}, custom=False)
    assert unknown.value.code == 415


def _labelled(**labels: str) -> dict[str, Any]:
    return {"metadata": {"labels": labels}}


@pytest.mark.parametrize(
    ("selector", "matching"),
    [
        ("app=web", {"web", "web-gpu"}),
        ("app==web", {"web", "web-gpu"}),
        ("app!=web", {"db", "bare"}),
        ("app in (web, db)", {"web", "web-gpu", "db"}),
        ("app notin (web)", {"db", "bare"}),
        ("gpu", {"web-gpu"}),
        ("!gpu", {"web", "db", "bare"}),
        ("app=web,!gpu", {"web"}),
        ("app in (web,db),tier notin (x)", {"web", "web-gpu", "db"}),
        ("", {"web", "web-gpu", "db", "bare"}),
    ],
)
def test_label_selectors(selector: str, matching: set[str]) -> None:
    objects = {
        "web": _labelled(app="web"),
        "web-gpu": _labelled(app="web", gpu="true"),
        "db": _labelled(app="db", tier="x2"),
        "bare": {"metadata": {}},
    }
    accept = compile_filter(selector, None)
    assert {name for name, obj in objects.items() if accept(obj)} == matching


@pytest.mark.parametrize("bad", ["app=", "a b", "app in web", "=x", "app=(x)"])
def test_bad_label_selectors_are_400(bad: str) -> None:
    if bad == "app=":
        # An empty value is legal: it matches an empty label value.
        assert parse_label_selector(bad)[0].values == frozenset({""})
        return
    with pytest.raises(ApiError) as caught:
        parse_label_selector(bad)
    assert caught.value.code == 400


def test_field_selectors() -> None:
    pods = {
        "a": {
            "metadata": {"name": "a", "namespace": "x"},
            "spec": {"nodeName": "n1"},
            "status": {"phase": "Running"},
        },
        "b": {
            "metadata": {"name": "b", "namespace": "y"},
            "spec": {},
            "status": {"phase": "Succeeded"},
        },
    }

    def names(field_selector: str) -> set[str]:
        accept = compile_filter(None, field_selector)
        return {name for name, obj in pods.items() if accept(obj)}

    assert names("spec.nodeName=n1") == {"a"}
    assert names("spec.nodeName=") == {"b"}
    assert names("status.phase!=Succeeded,metadata.namespace=x") == {"a"}
    assert names("metadata.name==b") == {"b"}
    with pytest.raises(ApiError):
        compile_filter(None, "nonsense")


def test_selector_objects_render_as_strings() -> None:
    selector = {
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [
            {"key": "t", "operator": "In", "values": ["y", "x"]},
            {"key": "u", "operator": "DoesNotExist"},
        ],
    }
    assert selector_to_string(selector) == "a=1,b=2,t in (x,y),!u"
