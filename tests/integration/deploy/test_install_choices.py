"""Every choice of an install, as an admin makes it: the template (manifests/install) with
its commented lines uncommented, as they stand, and values of their own in settings.yaml.
Each variant builds, its objects are valid, and each value lands where it belongs: the
image in both containers, the release label on every monitor and rule, the Prometheus
namespace in both NetworkPolicies, its URL in the controller, Slack's channel and token
files, enforce mode, the RuntimeClass. The shipped template itself is in KUSTOMIZATIONS."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from guardian.app.settings.config_file import parse_settings

from .conftest import MANIFESTS, Build, kustomize_build
from .test_config import CONFIG_KEY, effective_sections
from .test_manifests import CRD_SCHEMAS, K8S_VERSIONS, MONITORS
from .test_network import admits

VALUES = {
    "image": "registry.example.com/team/gpu-guardian:1.2.3",
    "prometheusRelease": "prom-stack",
    "prometheusNamespace": "observability",
    "prometheusUrl": "http://thanos-query.observability.svc:10902",
    "slackChannel": "C0999ZZZZ",
}
TOKENS = {"slack-bot-token": "xoxb-test-bot", "slack-app-token": "xapp-test-app"}


def uncommented(template: str, *, dcgm: bool) -> str:
    """The template with every optional line switched on, as an admin would."""
    out: list[str] = []
    generator = False
    for line in template.splitlines():
        if line.startswith("# secretGenerator:"):
            generator = True
        if line.startswith("  # - ../components/"):
            line = "  - " + line.removeprefix("  # - ")
        elif dcgm and line == "  - ../base":
            line = "  # - ../base"
        elif dcgm and line == "  # - ../overlays/dcgm-exporter":
            line = "  - ../overlays/dcgm-exporter"
        elif generator and line.startswith("#"):
            line = line[2:]
        out.append(line)
    return "\n".join(out) + "\n"


def _variant(tmp: Path, kubectl: str, *, dcgm: bool) -> Build:
    tree = tmp / "manifests"
    shutil.copytree(MANIFESTS, tree)
    site = tree / "my-cluster"
    shutil.copytree(MANIFESTS / "install", site)
    template = (site / "kustomization.yaml").read_text(encoding="utf-8")
    (site / "kustomization.yaml").write_text(uncommented(template, dcgm=dcgm), encoding="utf-8")
    settings = yaml.safe_load((site / "settings.yaml").read_text(encoding="utf-8"))
    assert set(settings["data"]) == set(VALUES), "the template's settings changed: update VALUES"
    settings["data"] = VALUES
    (site / "settings.yaml").write_text(yaml.safe_dump(settings), encoding="utf-8")
    (site / "secrets").mkdir()
    for name, token in TOKENS.items():
        (site / "secrets" / name).write_text(token, encoding="utf-8")
    return Build("my-cluster", kustomize_build(kubectl, site))


@pytest.fixture(scope="module", params=["exporter", "dcgm-exporter"])
def variant(
    request: pytest.FixtureRequest, kubectl: str, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Build]:
    dcgm = request.param == "dcgm-exporter"
    return request.param, _variant(tmp_path_factory.mktemp(request.param), kubectl, dcgm=dcgm)


def test_every_choice_builds_valid_objects(variant: tuple[str, Build]) -> None:
    _, build = variant
    assert not [
        o for o in build.of_kind("ConfigMap") if o["metadata"]["name"] == "gpu-guardian-install"
    ]
    for obj in build.objects:
        if obj["kind"] in CRD_SCHEMAS or obj["kind"] in MONITORS:
            continue
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)


def test_the_image_and_prometheus_values_land(variant: tuple[str, Build]) -> None:
    mode, build = variant
    images = {c["image"] for _, c in build.containers()}
    assert images == {VALUES["image"]}
    labelled = [o for o in build.objects if o["kind"] in {*MONITORS, "PrometheusRule"}]
    assert len(labelled) == 3
    for obj in labelled:
        assert obj["metadata"]["labels"]["release"] == VALUES["prometheusRelease"], obj["kind"]
    policies = build.of_kind("NetworkPolicy")
    assert len(policies) == (1 if mode == "dcgm-exporter" else 2)
    prometheus = {"app.kubernetes.io/name": "prometheus"}
    for policy in policies:
        ns = policy["metadata"]["namespace"]
        theirs = {"kubernetes.io/metadata.name": VALUES["prometheusNamespace"]}
        assert admits(policy, ns, theirs, prometheus)
        assert not admits(policy, ns, {"kubernetes.io/metadata.name": "monitoring"}, prometheus)
    _, _, env = effective_sections(build)
    assert env["GUARDIAN_PROMETHEUS__URL"] == VALUES["prometheusUrl"]
    host = VALUES["prometheusUrl"].split("//")[1].split(":")[0]
    assert host.split(".")[1] == VALUES["prometheusNamespace"]  # the admitted namespace


def test_slack_enforce_and_runtime_choices_land(variant: tuple[str, Build]) -> None:
    mode, build = variant
    text, _, env = effective_sections(build)
    settings = parse_settings(text, f"/etc/gpu-guardian/config/{CONFIG_KEY}", env)
    assert settings.remediation.dry_run is False  # type: ignore[attr-defined]
    slack = settings.slack  # type: ignore[attr-defined]
    assert slack.enabled
    assert slack.routing.default_channel == VALUES["slackChannel"]
    assert slack.interactivity.enabled
    secret = build.one("Secret", "gpu-guardian-slack")
    decoded = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert decoded == {"token": TOKENS["slack-bot-token"], "app-token": TOKENS["slack-app-token"]}
    mounts = build.one("Deployment", "gpu-guardian-controller")["spec"]["template"]["spec"]
    (volume,) = [v for v in mounts["volumes"] if "secret" in v]
    assert volume["secret"]["secretName"] == "gpu-guardian-slack"
    assert str(slack.token_file) == "/var/run/secrets/gpu-guardian/slack/token"
    assert str(slack.interactivity.app_token_file).endswith("/slack/app-token")
    policies = build.configmap("gpu-guardian-policies")["data"]
    assert "mode: enforce" in policies["reclaim-idle-gpus.yaml"]
    if mode == "exporter":
        exporter = build.one("DaemonSet", "gpu-guardian-exporter")["spec"]["template"]["spec"]
        assert exporter["runtimeClassName"] == "nvidia"
    else:
        assert not build.of_kind("DaemonSet")


def test_uncommenting_switches_every_optional_line() -> None:
    template = (MANIFESTS / "install" / "kustomization.yaml").read_text(encoding="utf-8")
    on = uncommented(template, dcgm=False)
    components = sorted(p.name for p in (MANIFESTS / "components").iterdir() if p.is_dir())
    for name in components:
        assert f"  - ../components/{name}\n" in on, f"the template does not offer {name}"
    assert "\nsecretGenerator:\n" in on
    assert "  - ../overlays/dcgm-exporter\n" in uncommented(template, dcgm=True)
