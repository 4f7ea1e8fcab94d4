"""FakeKubeAPI: start the fake API server, seed it, inspect it, and inject faults."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from guardian_common.stop_on_exit import StopOnExit
from testbed.kubeapi.crds import is_crd, on_crd_event
from testbed.kubeapi.faults import Fault, Recorder, RequestRecord
from testbed.kubeapi.patch import merge_patch
from testbed.kubeapi.resources import ResourceRegistry, ResourceType
from testbed.kubeapi.store import Clock, Obj, Store, StoredEvent
from testbed.kubeapi.wire import KubeHTTPServer

DEFAULT_NAMESPACES = ("default", "kube-system")


def system_clock() -> datetime:
    return datetime.now(UTC)


def _serve_crds(registry: ResourceRegistry, event: StoredEvent) -> None:
    if is_crd(event.rtype):
        on_crd_event(registry, event.type, event.obj)


class FakeKubeAPI(StopOnExit):
    """A Kubernetes API server on loopback for tests and the demo.

    Start it with :meth:`start` (or use it as a context manager), point a
    client at :meth:`write_kubeconfig`, seed objects with :meth:`create`, and
    assert on :meth:`get`, :meth:`objects` and :meth:`requests`.
    """

    def __init__(self, server: KubeHTTPServer, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        self._stopped = False

    @classmethod
    def start(
        cls,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        clock: Clock | None = None,
        token: str | None = None,
        namespaces: Iterable[str] = DEFAULT_NAMESPACES,
        extra_resources: Iterable[ResourceType] = (),
        history_limit: int = 10_000,
        bookmark_interval_s: float = 60.0,
    ) -> FakeKubeAPI:
        """Serve on ``host:port`` (0: a free port). ``token``: require this bearer token."""
        registry = ResourceRegistry.with_builtins(extra_resources)
        store = Store(clock or system_clock, history_limit=history_limit)
        store.listeners.append(partial(_serve_crds, registry))
        server = KubeHTTPServer(
            (host, port),
            store=store,
            registry=registry,
            recorder=Recorder(),
            token=token,
            bookmark_interval_s=bookmark_interval_s,
        )
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="fake-kubeapi"
        )
        api = cls(server, thread)
        try:
            for name in namespaces:
                api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        except BaseException:
            server.server_close()
            raise
        thread.start()
        return api

    def stop(self) -> None:
        """Stop serving, end every watch and connection, and join all server threads."""
        if self._stopped:
            return
        self._stopped = True
        self._server.stopping.set()
        self._server.store.close_watches()
        self._server.shutdown()
        self._server.close_connections()
        self._server.server_close()
        self._thread.join()

    # ------------------------------------------------------------ connection

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def kubeconfig(self, *, context: str = "fake", namespace: str = "default") -> dict[str, Any]:
        user: dict[str, Any] = {"token": self._server.token or "fake-token"}
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": user}],
            "contexts": [
                {
                    "name": context,
                    "context": {"cluster": context, "user": context, "namespace": namespace},
                }
            ],
            "current-context": context,
            "preferences": {},
        }

    def write_kubeconfig(
        self, path: str | Path, *, context: str = "fake", namespace: str = "default"
    ) -> Path:
        """Write a kubeconfig for this server (loadable by the client and by kubectl)."""
        target = Path(path)
        target.write_text(
            yaml.safe_dump(self.kubeconfig(context=context, namespace=namespace)), encoding="utf-8"
        )
        return target

    # ------------------------------------------------------------ objects

    @property
    def resource_version(self) -> str:
        return str(self._server.store.resource_version)

    def resource_type(self, kind: str, api_version: str | None = None) -> ResourceType:
        return self._server.registry.for_kind(kind, api_version)

    def _locate(
        self, kind: str, namespace: str | None, api_version: str | None
    ) -> tuple[ResourceType, str]:
        rtype = self.resource_type(kind, api_version)
        return rtype, (namespace or "default") if rtype.namespaced else ""

    def create(self, obj: Mapping[str, Any]) -> Obj:
        """Seed ``obj`` as it would be after controllers ran: uid, creationTimestamp and status
        are kept when given, and a missing namespace is created."""
        rtype, namespace = self._locate(
            str(obj.get("kind", "")),
            (obj.get("metadata") or {}).get("namespace"),
            obj.get("apiVersion"),
        )
        store = self._server.store
        if rtype.namespaced:
            ns_type = self.resource_type("Namespace", "v1")
            if not store.exists(ns_type, "", namespace):
                store.create(ns_type, "", {"metadata": {"name": namespace}}, seed=True)
        return store.create(rtype, namespace, dict(obj), seed=True)

    def get(
        self, kind: str, name: str, namespace: str | None = None, *, api_version: str | None = None
    ) -> Obj:
        rtype, ns = self._locate(kind, namespace, api_version)
        return self._server.store.get(rtype, ns, name)

    def objects(
        self, kind: str, namespace: str | None = None, *, api_version: str | None = None
    ) -> list[Obj]:
        """All stored objects of ``kind`` (in ``namespace``, or everywhere when None)."""
        rtype = self.resource_type(kind, api_version)
        items, _ = self._server.store.list_objects(rtype, namespace if rtype.namespaced else None)
        return items

    def patch(
        self,
        kind: str,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        *,
        api_version: str | None = None,
    ) -> Obj:
        """Merge-patch an object as a controller would; status may change too."""
        rtype, ns = self._locate(kind, namespace, api_version)
        return self._server.store.mutate(
            rtype, ns, name, lambda current: merge_patch(current, dict(patch)), seed=True
        )

    def update(self, obj: Mapping[str, Any]) -> Obj:
        """Replace an object (status included); a given resourceVersion must be current."""
        meta = obj.get("metadata") or {}
        rtype, ns = self._locate(
            str(obj.get("kind", "")), meta.get("namespace"), obj.get("apiVersion")
        )
        return self._server.store.mutate(
            rtype,
            ns,
            str(meta.get("name", "")),
            lambda _current: copy.deepcopy(dict(obj)),
            seed=True,
        )

    def delete(
        self, kind: str, name: str, namespace: str | None = None, *, api_version: str | None = None
    ) -> Obj:
        rtype, ns = self._locate(kind, namespace, api_version)
        return self._server.store.delete(rtype, ns, name)

    def end_watches(self) -> None:
        """End every open watch stream cleanly, as an API server restart or timeout would."""
        self._server.store.close_watches()

    def expire_history(self) -> str:
        """Forget the watch history: a watch from any version up to now gets 410 Gone."""
        return str(self._server.store.compact())

    # ------------------------------------------------------------ faults and the request log

    def add_fault(self, fault: Fault) -> Fault:
        return self._server.recorder.add_fault(fault)

    def fail_next(
        self,
        status: int,
        *,
        verb: str | None = None,
        path: str | None = None,
        times: int | None = 1,
        message: str | None = None,
        reason: str | None = None,
        retry_after: int | None = None,
    ) -> Fault:
        """Answer the next ``times`` matching requests with a ``status`` Status (None: forever)."""
        return self.add_fault(
            Fault(
                verb=verb,
                path=path,
                status=status,
                times=times,
                message=message,
                reason=reason,
                retry_after=retry_after,
            )
        )

    def delay_next(
        self,
        seconds: float,
        *,
        verb: str | None = None,
        path: str | None = None,
        times: int | None = 1,
    ) -> Fault:
        """Stall the next matching requests for ``seconds`` before serving them normally."""
        return self.add_fault(Fault(verb=verb, path=path, delay=seconds, times=times))

    def disconnect_next(
        self, *, verb: str | None = None, path: str | None = None, times: int | None = 1
    ) -> Fault:
        """Close the connection of the next matching requests without answering."""
        return self.add_fault(Fault(verb=verb, path=path, disconnect=True, times=times))

    def clear_faults(self) -> None:
        self._server.recorder.clear_faults()

    def requests(self, *, verb: str | None = None, path: str | None = None) -> list[RequestRecord]:
        """Requests served so far, oldest first; ``path`` is a regex searched in the URL path."""
        return self._server.recorder.requests(verb=verb, path=path)

    def clear_requests(self) -> None:
        self._server.recorder.clear_requests()
