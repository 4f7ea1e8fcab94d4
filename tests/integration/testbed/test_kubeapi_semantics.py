"""Pure semantics of the fake API: patches, selectors and validation (no server)."""

from __future__ import annotations

from typing import Any

import pytest

from testbed.kubeapi.errors import ApiError
from testbed.kubeapi.patch import merge_patch, require_patch_type
from testbed.kubeapi.resources import BUILTIN_RESOURCES, CrdInfo, ResourceType
from testbed.kubeapi.selectors import (
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


DEPLOYMENTS = next(t for t in BUILTIN_RESOURCES if t.kind == "Deployment")
WIDGETS = ResourceType("example.com", "v1", "Widget", "widgets", crd=CrdInfo())


@pytest.mark.parametrize(
    "content_type",
    ["application/json-patch+json", "application/apply-patch+yaml", None],
)
def test_only_merge_and_strategic_merge_patch_are_accepted(content_type: str | None) -> None:
    with pytest.raises(ApiError) as caught:
        require_patch_type(DEPLOYMENTS, content_type)
    assert caught.value.code == 415
    assert require_patch_type(DEPLOYMENTS, "application/merge-patch+json; charset=utf-8") == (
        "application/merge-patch+json"
    )
    assert require_patch_type(DEPLOYMENTS, "application/strategic-merge-patch+json") == (
        "application/strategic-merge-patch+json"
    )


def test_custom_resources_take_merge_patch_only() -> None:
    with pytest.raises(ApiError) as caught:
        require_patch_type(WIDGETS, "application/strategic-merge-patch+json")
    assert (caught.value.code, caught.value.reason) == (415, "UnsupportedMediaType")
    assert caught.value.message == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/merge-patch+json"
    )
    assert require_patch_type(WIDGETS, "application/merge-patch+json")


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
