"""KubeReader: the one module that talks to the Kubernetes API.

Lists are requested raw (`_preload_content=False`) and decoded straight into lbhc's
projections: the client's own models cost ~10x the memory and 4x the time (reference.md 5).
Every request has a client-side timeout so a half-open connection cannot hang a reconcile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from lbhc.kube.decode import NodeList, PodList, ServiceList, describe_validation_error
from lbhc.model.cluster import ClusterSnapshot, Namespace

log = logging.getLogger(__name__)
L = TypeVar("L", NodeList, ServiceList, PodList)
PAGE_SIZE = 500
EXPIRED = 410


class KubeReadError(RuntimeError):
    """Something the pass cannot do without could not be read."""


@dataclass(frozen=True)
class KubeConfig:
    kubeconfig: str | None = None
    context: str | None = None
    host: str | None = None  # a plain URL instead of a kubeconfig (tests, the sandbox)
    connect_timeout_sec: float = 5.0
    read_timeout_sec: float = 30.0


def make_api_client(config: KubeConfig) -> Any:
    """In-cluster when running in a Pod and no kubeconfig is named; kubeconfig otherwise."""
    import os

    from kubernetes import client
    from kubernetes import config as kube_config

    configuration = client.Configuration()
    if config.host:
        configuration.host = config.host
    elif config.kubeconfig or config.context or "KUBERNETES_SERVICE_HOST" not in os.environ:
        kube_config.load_kube_config(
            config_file=config.kubeconfig,
            context=config.context,
            client_configuration=configuration,
        )
    else:
        kube_config.load_incluster_config(client_configuration=configuration)
    return client.ApiClient(configuration)


class KubeReader:
    def __init__(
        self,
        api_client: Any,
        config: KubeConfig,
        kube_proxy_namespace: str = "kube-system",
        kube_proxy_selector: str = "k8s-app=kube-proxy",
        read_cluster_uid: bool = True,
    ) -> None:
        from kubernetes import client

        self._core = client.CoreV1Api(api_client)
        self._timeout = (config.connect_timeout_sec, config.read_timeout_sec)
        self._namespace = kube_proxy_namespace
        self._selector = kube_proxy_selector
        self._read_cluster_uid = read_cluster_uid

    def read_snapshot(self) -> ClusterSnapshot:
        """Everything the planner needs. A list that fails becomes a gap, so the planner
        withholds removals instead of acting on half a cluster."""
        gaps: list[str] = []
        nodes = self._list("nodes", NodeList, lambda **kw: self._core.list_node(**kw), gaps)
        services = self._list(
            "services",
            ServiceList,
            lambda **kw: self._core.list_service_for_all_namespaces(**kw),
            gaps,
        )
        pods = self._list(
            "kube-proxy pods",
            PodList,
            lambda **kw: self._core.list_namespaced_pod(
                self._namespace, label_selector=self._selector, **kw
            ),
            gaps,
        )
        return ClusterSnapshot(
            nodes=nodes.items if nodes else (),
            services=services.items if services else (),
            kube_proxy_pods=pods.items if pods else (),
            kube_system_uid=self._kube_system_uid(),
            gaps=tuple(gaps),
            versions_complete=nodes is not None and pods is not None,
        )

    def _kube_system_uid(self) -> str | None:
        """Only needed to derive the cluster id. Failing to read it is not a gap (a gap would
        withhold removals for ever) but an error: names cannot be known without it."""
        if not self._read_cluster_uid:
            return None
        try:
            response = self._core.read_namespace(
                "kube-system", _preload_content=False, _request_timeout=self._timeout
            )
            data: bytes = response.data  # type: ignore[attr-defined]  # raw with _preload_content=False
            return Namespace.model_validate_json(data).metadata.uid or None
        except Exception as exc:
            raise KubeReadError(
                f"cannot read namespace kube-system to derive the cluster id ({_describe(exc)}): "
                "allow `get` on namespaces, or set --cluster-id"
            ) from exc

    def _list(
        self, what: str, model: type[L], call: Callable[..., Any], gaps: list[str]
    ) -> L | None:
        """All pages, or None with a gap. An expired continue token (410) restarts the list
        once from the beginning, as a fresh consistent read."""
        for attempt in range(2):
            items: list[Any] = []
            token = ""
            try:
                while True:
                    response = call(
                        limit=PAGE_SIZE,
                        _continue=token or None,
                        _preload_content=False,
                        _request_timeout=self._timeout,
                    )
                    page = model.model_validate_json(response.data)
                    items.extend(page.items)
                    token = page.metadata.continue_token
                    if not token:
                        return model(items=tuple(items))
            except Exception as exc:
                if _status(exc) == EXPIRED and attempt == 0:
                    log.info("%s list expired mid-way; restarting it", what)
                    continue
                gaps.append(f"{what} could not be listed: {_describe(exc)}")
                return None
        return None


def _status(exc: BaseException) -> int:
    return int(getattr(exc, "status", 0) or 0)


def _describe(exc: BaseException) -> str:
    """Status and reason only: response headers or bodies could echo credentials."""
    if isinstance(exc, ValidationError):
        return f"unexpected response: {describe_validation_error(exc)}"
    status = _status(exc)
    if status:
        return f"HTTP {status} {getattr(exc, 'reason', '')}".strip()
    return type(exc).__name__
