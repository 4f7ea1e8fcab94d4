"""A newer controller reads what an older one wrote (docs/deploy.md, "Versions: what an
upgrade keeps"). tests/fixtures/state/v1/ is the state version 1 of the records wrote:
episode shards, Slack clicks, and the annotations a reclaim leaves on workloads (see
state_fixture.py). Today's controller must read all of it, and restore what it reclaimed;
while the format is still version 1 it must also write exactly that, so that a change of
format is a decision (a new version, a new fixture) and never an accident.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from guardian.adapters.kube.click_store import DONE, PENDING, ClickStore
from guardian.adapters.kube.episode_store import VERSION, EpisodeStore, decode, encode
from guardian.adapters.kube.rest import KubeRest
from guardian.cli import main
from guardian.model.policies import PREFIX, Annotations
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b

from .reclaimed import NS as WORKLOAD_NS
from .state_fixture import CLICK, NS, PENDING_CLICK, V1, current_state, dump, episodes, load

pytestmark = pytest.mark.e2e
STATE = "gpu-guardian.io/state"


@pytest.fixture(scope="module")
def v1() -> dict[str, Any]:
    return load(V1)


def test_today_writes_version_1_exactly_as_the_fixture_holds() -> None:
    """If this fails, the stored format changed: bump episode_store.VERSION (or make the
    change additive), write tests/fixtures/state/v2, and keep v1's reading tests."""
    assert VERSION == 1
    written = dump(current_state())
    for name, text in written.items():
        assert (V1 / name).read_text(encoding="utf-8") == text, f"{name} differs from v1"


def test_every_v1_record_decodes_to_what_was_written(v1: dict[str, Any]) -> None:
    expected = {e.episode: e for e in episodes()}
    found = {
        key: decode(key, text) for shard in v1["shards"].values() for key, text in shard.items()
    }
    assert found == expected
    for key, episode in expected.items():
        record = json.loads(next(s[key] for s in v1["shards"].values() if key in s))
        assert json.loads(encode(episode)) == record


def test_a_new_leader_loads_the_v1_shards_and_clicks(
    kube: FakeKubeAPI, api_client: Any, v1: dict[str, Any]
) -> None:
    for name, data in v1["shards"].items():
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": NS, "labels": {STATE: "episodes"}},
                "data": data,
            }
        )
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "gpu-guardian-clicks", "namespace": NS},
            "data": v1["clicks"],
        }
    )
    rest = KubeRest(api_client)
    store = EpisodeStore(rest, NS)
    store.load()
    assert {e.episode: e for e in store.episodes()} == {e.episode: e for e in episodes()}
    clicks = ClickStore(rest, NS)
    assert clicks.get(CLICK) is not None
    assert clicks.get(CLICK).state == DONE  # type: ignore[union-attr]
    assert [r.click for r in clicks.pending()] == [PENDING_CLICK]
    assert all(r.state in (DONE, PENDING) for r in clicks.records().values())


def test_a_record_of_a_newer_version_is_kept_and_never_acted_on(
    kube: FakeKubeAPI, api_client: Any, v1: dict[str, Any]
) -> None:
    """A rollback: an older controller beside a newer one's records reads none of them as
    its own, and keeps them as they are when it writes their shard."""
    name, data = next(iter(v1["shards"].items()))
    newer = json.dumps({"v": VERSION + 1, "workload": ["apps/v1", "Deployment", "ml", "x"]})
    meta = {"name": name, "namespace": NS, "labels": {STATE: "episodes"}}
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta,
            "data": {**data, "ep-v2": newer},
        }
    )
    store = EpisodeStore(KubeRest(api_client), NS)
    store.load()
    assert "ep-v2" not in {e.episode for e in store.episodes()}
    fresh = next(f"ep-new-{i}" for i in range(1000) if store.shard_of(f"ep-new-{i}") == name)
    record = dataclasses.replace(episodes()[0], episode=fresh)
    store.update(fresh, lambda _: record, record.updated_at)
    stored = kube.get("ConfigMap", name, NS)["data"]
    assert stored["ep-v2"] == newer
    assert fresh in stored


BUILD = {
    "Deployment": b.deployment,
    "StatefulSet": b.statefulset,
    "CronJob": b.cronjob,
    "Job": b.job,
    "Notebook": b.notebook,
}


def test_workloads_reclaimed_by_v1_are_restored_exactly(
    kube: FakeKubeAPI, v1: dict[str, Any], tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    known = {v for k, v in vars(Annotations).items() if k.isupper() and isinstance(v, str)}
    for item in v1["workloads"]:
        ours = {k for k in item["annotations"] if k.startswith(PREFIX)}
        assert ours <= known, (
            f"annotation keys v1 wrote that this version does not know: {ours - known}"
        )
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOAD_NS}})
    for item in v1["workloads"]:
        obj = BUILD[item["kind"]](item["name"], WORKLOAD_NS)
        obj["spec"].update(item["spec"])
        obj["metadata"]["annotations"] = item["annotations"]
        created = kube.create(obj)
        if Annotations.HPA in item["annotations"]:  # changed by someone since the reclaim
            kube.create(b.hpa(created, min_replicas=1, max_replicas=6))
    kubeconfig = str(kube.write_kubeconfig(tmp_path / "kubeconfig"))
    assert main(["restore", "--all", "--remove-annotations", "--kubeconfig", kubeconfig]) == 0
    out = capsys.readouterr().out
    assert "ml/Deployment/train: scaled back to 3; HPA train minReplicas 2" in out
    assert kube.get("HorizontalPodAutoscaler", "train", WORKLOAD_NS)["spec"]["minReplicas"] == 2
    assert "ml/StatefulSet/serve: scaled back to 2" in out
    assert "ml/CronJob/nightly: unsuspended" in out
    assert "ml/Notebook/nb: notebook started" in out
    assert kube.get("Job", "nightly-1", WORKLOAD_NS)["spec"]["suspend"] is False
    for item in v1["workloads"]:
        left = kube.get(item["kind"], item["name"], WORKLOAD_NS)["metadata"].get("annotations")
        assert not [k for k in left or {} if k.startswith(PREFIX)], item["name"]
