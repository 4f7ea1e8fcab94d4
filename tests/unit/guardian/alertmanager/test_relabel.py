"""alert_relabel_configs, as Prometheus 2.42's model/relabel applies them."""

from __future__ import annotations

import time

import pytest

from guardian.engine.alertmanager.relabel import RelabelError, compile_anchored, process
from guardian.model.relabel_config import RelabelAction, RelabelConfig

A = RelabelAction
BASE = {"alertname": "GpuIdle", "namespace": "ml", "pod": "train-0", "node": "n1"}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (RelabelConfig(("pod",), target_label="workload"), {**BASE, "workload": "train-0"}),
        (
            RelabelConfig(("namespace", "pod"), separator="/", target_label="where"),
            {**BASE, "where": "ml/train-0"},
        ),
        (
            RelabelConfig(("pod",), regex="(.*)-(\\d+)", replacement="${1}_$2", target_label="x"),
            {**BASE, "x": "train_0"},
        ),
        (RelabelConfig(("pod",), regex="nomatch", target_label="x"), BASE),
        # An empty result deletes the target; $1x is the (absent) group "1x", so empty.
        (
            RelabelConfig(("missing",), target_label="node"),
            {k: v for k, v in BASE.items() if k != "node"},
        ),
        (
            RelabelConfig(("pod",), replacement="$1x", target_label="node"),
            {k: v for k, v in BASE.items() if k != "node"},
        ),
        (
            RelabelConfig(("pod",), regex="(train)-0", target_label="${1}_name"),
            {**BASE, "train_name": "train"},
        ),
        (RelabelConfig(("pod",), target_label="up", action=A.UPPERCASE), {**BASE, "up": "TRAIN-0"}),
        (
            RelabelConfig(("alertname",), target_label="low", action=A.LOWERCASE),
            {**BASE, "low": "gpuidle"},
        ),
        # md5("train-0"), last 8 bytes big-endian, mod 10 (the parity e2e checks it against
        # Prometheus itself).
        (
            RelabelConfig(("pod",), modulus=10, target_label="shard", action=A.HASHMOD),
            {**BASE, "shard": "4"},
        ),
        (
            RelabelConfig(regex="(name)space", replacement="k8s_$1", action=A.LABELMAP),
            {**BASE, "k8s_name": "ml"},
        ),
        (
            RelabelConfig(regex="pod|node", action=A.LABELDROP),
            {"alertname": "GpuIdle", "namespace": "ml"},
        ),
        (
            RelabelConfig(regex="alertname|pod", action=A.LABELKEEP),
            {"alertname": "GpuIdle", "pod": "train-0"},
        ),
        # Anchored: "od" does not match "pod".
        (RelabelConfig(regex="od", action=A.LABELDROP), BASE),
    ],
)
def test_actions(config: RelabelConfig, expected: dict[str, str]) -> None:
    assert process(BASE, [config]) == expected


@pytest.mark.parametrize(
    ("config", "kept"),
    [
        (RelabelConfig(("namespace",), regex="ml", action=A.DROP), False),
        (RelabelConfig(("namespace",), regex="m", action=A.DROP), True),  # anchored
        (RelabelConfig(("namespace",), regex="ml|x", action=A.KEEP), True),
        (RelabelConfig(("namespace",), regex="x", action=A.KEEP), False),
        (RelabelConfig(("pod",), target_label="pod", action=A.KEEPEQUAL), True),
        (RelabelConfig(("pod",), target_label="node", action=A.KEEPEQUAL), False),
        (RelabelConfig(("pod",), target_label="pod", action=A.DROPEQUAL), False),
    ],
)
def test_keep_and_drop(config: RelabelConfig, kept: bool) -> None:
    assert (process(BASE, [config]) is not None) is kept


def test_configs_apply_in_order_and_see_each_others_output() -> None:
    configs = [
        RelabelConfig(("pod",), target_label="copy"),
        RelabelConfig(("copy",), regex="train-.*", action=A.DROP),
    ]
    assert process(BASE, configs) is None


def test_a_trailing_newline_does_not_match_the_anchor() -> None:
    drop = RelabelConfig(("pod",), regex="train-0", action=A.DROP)
    assert process({**BASE, "pod": "train-0\n"}, [drop]) is not None


@pytest.mark.parametrize(
    ("regex", "message"),
    [  # promtool check config (Prometheus 2.42) says the same of each
        ("(", "error parsing regexp: missing closing ): `^(?:()$`"),
        ("\\C", "error parsing regexp: invalid escape sequence: `\\C`"),
        ("(?<n>a)", "error parsing regexp: invalid or unsupported Perl syntax: `(?<`"),
    ],
)
def test_regexes_go_refuses_are_refused_in_its_words(regex: str, message: str) -> None:
    with pytest.raises(RelabelError) as caught:
        compile_anchored(regex)
    assert str(caught.value) == message


def test_only_the_anchored_form_is_compiled() -> None:
    assert compile_anchored("a)|(b").fullmatch("b") is not None  # ^(?:a)|(b)$, as Prometheus


@pytest.mark.parametrize("regex", ["(a|aa)+b", "(a+)+$", "(a*)*b", "^(a|a?)+$"])
def test_a_catastrophic_regex_relabels_in_linear_time(regex: str) -> None:
    """Python's re takes minutes or more on 40 "a"s; Prometheus, and this, microseconds."""
    labels = {**BASE, "pod": "a" * 40 + "!"}
    configs = [
        RelabelConfig(("pod",), regex=regex, action=A.DROP),
        RelabelConfig(("pod",), regex=regex, target_label="x", replacement="$1"),
        RelabelConfig(regex=regex, action=A.LABELDROP),
    ]
    started = time.monotonic()
    assert process(labels, configs) == labels
    assert process(labels, [RelabelConfig(("pod",), regex=regex, action=A.KEEP)]) is None
    assert time.monotonic() - started < 2.0
