"""The platform series both packs' platform group reads: Prometheus remote write (the
3.7+ per-queue metric and the 2.42 global one), Thanos Query and Receive, and GPU
Guardian's own engine counters. One healthy and one failing instance of each."""

from __future__ import annotations

from fleet_core import Fleet, Series, Timeline, label_text
from fleet_shapes import const, counter, timestamps


def add_platform(fleet: Fleet, t: Timeline) -> None:
    lo, hi = 0, t.steps
    cluster = {"cluster": "gpu-east"}

    def add(name: str, labels: dict[str, str], segments: list) -> None:  # type: ignore[type-arg]
        fleet.add(Series(name, label_text(cluster | labels), 0, segments))

    queue = {"remote_name": "thanos", "url": "http://thanos-receive:19291/api/v1/receive"}
    for n, (new_metric, lag) in enumerate(
        ((True, 5.0), (True, 400.0), (False, 3.0), (False, 600.0))
    ):
        target = {"job": "prometheus", "instance": f"prometheus-{n}:9090"}
        if new_metric:
            add(
                "prometheus_remote_storage_queue_highest_timestamp_seconds",
                target | queue,
                timestamps(t, 0, lo, hi),
            )
        else:
            add(
                "prometheus_remote_storage_highest_timestamp_in_seconds",
                target,
                timestamps(t, 0, lo, hi),
            )
        add(
            "prometheus_remote_storage_queue_highest_sent_timestamp_seconds",
            target | queue,
            timestamps(t, 0, lo, hi, lag),
        )
    for job, failing in (("thanos-query", 0.04), ("thanos-query-eu", 0.0)):
        grpc = {
            "job": job,
            "instance": f"{job}-0:10902",
            "grpc_service": "thanos.Store",
            "grpc_method": "Series",
            "grpc_type": "server_stream",
        }
        add("grpc_client_started_total", grpc, counter([(lo, hi, 30.0)]))
        add(
            "grpc_client_handled_total",
            grpc | {"grpc_code": "OK"},
            counter([(lo, hi, 30.0 * (1 - failing))]),
        )
        if failing:
            add(
                "grpc_client_handled_total",
                grpc | {"grpc_code": "Unavailable"},
                counter([(lo, hi, 30.0 * failing)]),
            )
    for job, failing in (("thanos-receive", 0.1), ("thanos-receive-eu", 0.0)):
        http = {"job": job, "instance": f"{job}-0:10902", "handler": "receive"}
        add(
            "http_requests_total", http | {"code": "200"}, counter([(lo, hi, 50.0 * (1 - failing))])
        )
        if failing:
            add("http_requests_total", http | {"code": "503"}, counter([(lo, hi, 50.0 * failing)]))
        for r in range(3):
            down = failing and r == 2
            add(
                "up",
                {"job": job, "instance": f"{job}-{r}:10902"},
                const("0" if down else "1", lo, hi),
            )
    engine = {"job": "gpu-guardian", "instance": "gpu-guardian-0:8080"}
    rule = {"group": "guardian-gpu-idle", "rule": "GpuIdle"}
    add("guardian_rule_evaluation_failures_total", engine | rule, counter([(lo, hi, 0.25)]))
    add(
        "guardian_rule_evaluation_failures_total",
        engine | rule | {"group": "guardian-gpu-memory"},
        const("0", lo, hi),
    )
    unhealthy = engine | rule | {"reason": "partial_response"}
    add("guardian_rule_evaluations_unhealthy_total", unhealthy, counter([(lo, hi, 0.25)]))
    add(
        "guardian_rule_group_iterations_missed_total",
        engine | {"group": "guardian-gpu-memory"},
        counter([(lo, hi, 0.25)]),
    )
    add(
        "guardian_rule_group_iterations_missed_total",
        engine | {"group": "guardian-gpu-idle"},
        const("0", lo, hi),
    )
