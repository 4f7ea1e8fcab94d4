from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import yaml

from guardian.engine.dcgm_config import (
    ClusterLabelVia,
    DcgmConfigRequest,
    GpuSharing,
    OutputFormat,
    ServiceDiscovery,
    dcgm_env,
    dcgm_rbac,
    pod_monitors,
    prometheus_config,
    service_monitors,
    sharing_from_device_plugin_config,
    warnings_for,
)
from guardian_common.grouping import GroupingError, GroupingOptions


def _request(**kwargs: Any) -> DcgmConfigRequest:
    grouping = GroupingOptions(
        group_label=kwargs.pop("group_label", "app.kubernetes.io/team"),
        allowlist_regex=kwargs.pop("allowlist", ""),
        cluster_name=kwargs.pop("cluster", ""),
    )
    return DcgmConfigRequest(grouping=grouping, **kwargs)


def test_env_turns_on_pod_labels_with_the_allowlist() -> None:
    assert dcgm_env(_request()) == [
        {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
        {"name": "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", "value": "true"},
        {
            "name": "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX",
            "value": r"^(app\.kubernetes\.io/team)$",
        },
    ]


def test_env_refuses_a_regex_with_a_comma() -> None:
    with pytest.raises(GroupingError, match="contains a comma"):
        dcgm_env(_request(group_label="prjId", allowlist="^(prjId|x{1,2})$"))


def test_dcgm_job_copies_the_group_and_fills_the_default_only_for_pods() -> None:
    config = prometheus_config(_request())
    dcgm, ours = config["scrape_configs"]

    assert dcgm["honor_labels"] is True
    assert dcgm["metric_relabel_configs"] == [
        {
            "source_labels": ["app_kubernetes_io_team"],
            "regex": "(.+)",
            "target_label": "gpu_group",
            "replacement": "$1",
            "action": "replace",
        },
        {
            "source_labels": ["gpu_group", "pod"],
            "separator": ";",
            "regex": ";.+",
            "target_label": "gpu_group",
            "replacement": "unassigned",
            "action": "replace",
        },
    ]
    # Our exporter sets gpu_group itself; it only needs honor_labels.
    assert ours["honor_labels"] is True
    assert ours["metric_relabel_configs"] == []
    assert "global" not in config


def test_cluster_goes_to_external_labels_by_default_and_relabel_on_request() -> None:
    external = prometheus_config(_request(cluster="prod"))
    relabel = prometheus_config(_request(cluster="pr$od", cluster_via=ClusterLabelVia.RELABEL))

    assert external["global"] == {"external_labels": {"cluster": "prod"}}
    assert "global" not in relabel
    assert relabel["scrape_configs"][1]["metric_relabel_configs"] == [
        {
            "source_labels": ["cluster"],
            "regex": "^$",
            "target_label": "cluster",
            "replacement": "pr$$od",
            "action": "replace",
        }
    ]


def test_kubernetes_sd_keeps_only_exporter_pods_and_file_sd_lists_them() -> None:
    k8s = prometheus_config(_request())["scrape_configs"][0]
    files = prometheus_config(_request(service_discovery=ServiceDiscovery.FILE, file_sd_dir="/sd"))[
        "scrape_configs"
    ][0]

    assert k8s["kubernetes_sd_configs"] == [
        {"role": "pod", "namespaces": {"names": ["gpu-operator"]}}
    ]
    assert {
        "source_labels": ["__meta_kubernetes_pod_label_app"],
        "regex": "nvidia-dcgm-exporter",
        "action": "keep",
    } in k8s["relabel_configs"]
    assert files["file_sd_configs"] == [{"files": ["/sd/dcgm-exporter.json"]}]
    # Neither mode lets the exporter's own pod name reach the series.
    drop = {"regex": "pod|namespace|container", "action": "labeldrop"}
    assert files["relabel_configs"] == [drop]
    assert k8s["relabel_configs"][-1] == drop


def test_monitors_use_operator_field_names() -> None:
    pod = pod_monitors(_request())[0]
    svc = service_monitors(_request())[0]

    endpoint = pod["spec"]["podMetricsEndpoints"][0]
    assert pod["kind"] == "PodMonitor"
    assert endpoint["honorLabels"] is True
    assert endpoint["metricRelabelings"][0]["sourceLabels"] == ["app_kubernetes_io_team"]
    assert endpoint["metricRelabelings"][0]["targetLabel"] == "gpu_group"
    assert svc["kind"] == "ServiceMonitor"
    assert svc["spec"]["endpoints"][0]["port"] == "gpu-metrics"
    assert pod["spec"]["selector"] == {"matchLabels": {"app": "nvidia-dcgm-exporter"}}


def test_rbac_grants_exactly_list_and_watch_on_pods() -> None:
    role, binding = dcgm_rbac(_request())

    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "nvidia-dcgm-exporter", "namespace": "gpu-operator"}
    ]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_device_plugin_sharing_is_detected_and_warned() -> None:
    document = yaml.safe_load(
        """
        version: v1
        sharing:
          timeSlicing:
            resources:
              - name: nvidia.com/gpu
                replicas: 4
        """
    )
    sharing = sharing_from_device_plugin_config(document)
    notes = warnings_for(_request(sharing=sharing | {GpuSharing.DRA}), OutputFormat.ENV)

    assert sharing == {GpuSharing.TIME_SLICING}
    assert [n.split(" is configured")[0] for n in notes] == [
        "GPU sharing via dra",
        "GPU sharing via time-slicing",
    ]
    assert not sharing_from_device_plugin_config({"version": "v1"})


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "guardian", "dcgm-config", *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("fmt", [f.value for f in OutputFormat])
def test_cli_prints_yaml_for_every_format(fmt: str) -> None:
    result = _cli("--group-label", "prjId", "--format", fmt)

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# Generated by guardian dcgm-config")
    assert list(yaml.safe_load_all(result.stdout))


def test_cli_reports_bad_options_with_exit_2() -> None:
    result = _cli("--group-label", "prjId", "--allowlist", "^team$", "--format", "env")

    assert result.returncode == 2
    assert result.stdout == ""
    assert "groupLabelAllowlistRegex: '^team$' does not match the group label 'prjId'" in (
        result.stderr
    )
