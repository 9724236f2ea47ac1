"""KubeApi: the one module that talks to the Kubernetes API; KubeReader reads through it.

Lists are requested raw (`_preload_content=False`) and decoded straight into lbhc's
projections: the client's own models cost ~10x the memory and 4x the time (docs/benchmarks.md, 4).
Every request has a client-side timeout so a half-open connection cannot hang a reconcile.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from lbhc.kube.decode import (
    DaemonSetList,
    NodeList,
    ObjectList,
    PodList,
    ServiceList,
    Undecodable,
    decode_page,
    describe_validation_error,
)
from lbhc.model.cluster import ClusterSnapshot, ConfigMap, DaemonSet, Namespace

log = logging.getLogger(__name__)
PAGE_SIZE = 500
_LEASES = "/apis/coordination.k8s.io/v1"
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
    # Longer than the server's bookmark interval (about a minute), or quiet watches would
    # time out; short enough that a half-open connection is noticed.
    watch_read_timeout_sec: float = 90.0


def make_api_client(config: KubeConfig) -> Any:
    """In-cluster when running in a Pod and no kubeconfig is named; kubeconfig otherwise."""
    import os

    from kubernetes import client
    from kubernetes import config as kube_config

    configuration = client.Configuration()
    if config.host:
        configuration.host = config.host
    elif config.kubeconfig or config.context or "KUBERNETES_SERVICE_HOST" not in os.environ:
        import yaml

        try:
            kube_config.load_kube_config(
                config_file=config.kubeconfig,
                context=config.context,
                client_configuration=configuration,
            )
        except yaml.YAMLError as exc:  # the client lets a parse error escape as a traceback
            where = config.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
            mark = getattr(exc, "problem_mark", None)
            line = f" (line {mark.line + 1})" if mark is not None else ""
            raise KubeReadError(
                f"kubeconfig {where} is not valid YAML{line}: expected a kubeconfig file "
                "as `kubectl config view --raw` writes it"
            ) from None
    else:
        kube_config.load_incluster_config(client_configuration=configuration)
    return client.ApiClient(configuration)


class Resource(StrEnum):
    """What lbhc lists and watches; the value names it in logs, gaps and metrics."""

    NODES = "nodes"
    SERVICES = "services"
    KUBE_PROXY_PODS = "kube-proxy pods"
    # Only for the readiness-probe policy: never a gap for the planner (see ClusterCache).
    KUBE_PROXY_DAEMONSETS = "kube-proxy daemonsets"


class WatchStream:
    """The lines of one watch response. close() from any thread ends the iteration, so a
    shutdown does not wait for the server's timeout."""

    def __init__(self, response: Any) -> None:
        self._response = response

    def __iter__(self) -> Iterator[bytes]:
        buffer = b""
        try:
            for chunk in self._response.stream(amt=65536, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield line
            if buffer.strip():
                yield buffer
        finally:
            self.close()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._response.shutdown()  # unblocks a read in progress in another thread
        with contextlib.suppress(Exception):
            self._response.release_conn()


class KubeApi:
    """Every call lbhc makes to the Kubernetes API, raw in and raw out: callers decode into
    projections. Leases and Events go out as plain JSON so timestamps are sent exactly as
    formatted (see _raw)."""

    def __init__(
        self,
        api_client: Any,
        config: KubeConfig,
        kube_proxy_namespace: str = "kube-system",
        kube_proxy_selector: str = "k8s-app=kube-proxy",
        daemonset_selector: str = "k8s-app=kube-proxy",
    ) -> None:
        """The selectors may be alternatives separated by `|`: the first is used until
        detect_selectors() has found the one that selects something."""
        from kubernetes import client

        self._api_client = api_client
        self._core = client.CoreV1Api(api_client)
        self._apps = client.AppsV1Api(api_client)
        self._daemonset_alternatives = _alternatives(daemonset_selector)
        self._daemonset_selector = self._daemonset_alternatives[0]
        self._timeout = (config.connect_timeout_sec, config.read_timeout_sec)
        self._watch_read_timeout = config.watch_read_timeout_sec
        self._namespace = kube_proxy_namespace
        self._alternatives = _alternatives(kube_proxy_selector)
        self._selector = self._alternatives[0]

    @property
    def kube_proxy_selector(self) -> str:
        return self._selector

    def detect_selectors(self, daemonsets: bool = True) -> bool:
        """Lists each alternative (one item at most) and keeps the first that selects any
        kube-proxy Pod (and DaemonSet): kubeadm, kube-up/GKE static Pods and Gardener label
        theirs differently. False when no alternative selects a Pod (the first is kept)."""
        found = self._first_selecting(self._core.list_namespaced_pod, self._alternatives)
        self._selector = found or self._alternatives[0]
        if daemonsets:
            self._daemonset_selector = (
                self._first_selecting(
                    self._apps.list_namespaced_daemon_set, self._daemonset_alternatives
                )
                or self._daemonset_alternatives[0]
            )
        return found is not None

    def _first_selecting(self, lister: Callable[..., Any], alternatives: list[str]) -> str | None:
        if len(alternatives) == 1:
            return alternatives[0]
        for selector in alternatives:
            response = lister(
                self._namespace,
                label_selector=selector,
                limit=1,
                _preload_content=False,
                _request_timeout=self._timeout,
            )
            if json.loads(_data(response) or b"{}").get("items"):
                return selector
        return None

    def _lister(self, resource: Resource) -> Callable[..., Any]:
        if resource is Resource.NODES:
            return self._core.list_node
        if resource is Resource.SERVICES:
            return self._core.list_service_for_all_namespaces
        if resource is Resource.KUBE_PROXY_DAEMONSETS:
            return functools.partial(
                self._apps.list_namespaced_daemon_set,
                self._namespace,
                label_selector=self._daemonset_selector,
            )
        return functools.partial(
            self._core.list_namespaced_pod, self._namespace, label_selector=self._selector
        )

    def list_page(self, resource: Resource, continue_token: str = "") -> bytes:
        response = self._lister(resource)(
            limit=PAGE_SIZE,
            _continue=continue_token or None,
            _preload_content=False,
            _request_timeout=self._timeout,
        )
        return _data(response)

    def watch(self, resource: Resource, resource_version: str, timeout_seconds: int) -> WatchStream:
        """A watch from `resource_version` with bookmarks. The read timeout bounds how long a
        silent (half-open) connection can hold it; the server ends it after timeout_seconds."""
        response = self._lister(resource)(
            watch=True,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout_seconds,
            _preload_content=False,
            _request_timeout=(self._timeout[0], self._watch_read_timeout),
        )
        return WatchStream(response)

    def read_namespace(self, name: str) -> bytes:
        return _data(
            self._core.read_namespace(name, _preload_content=False, _request_timeout=self._timeout)
        )

    def read_config_map(self, namespace: str, name: str) -> bytes | None:
        """None when it does not exist."""
        try:
            return _data(
                self._core.read_namespaced_config_map(
                    name, namespace, _preload_content=False, _request_timeout=self._timeout
                )
            )
        except Exception as exc:
            if status_of(exc) == 404:
                return None
            raise

    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self._raw("GET", f"{_LEASES}/namespaces/{namespace}/leases/{name}")
        except Exception as exc:
            if status_of(exc) == 404:
                return None
            raise

    def create_lease(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._raw("POST", f"{_LEASES}/namespaces/{namespace}/leases", body)

    def replace_lease(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """A stale metadata.resourceVersion gets 409: someone else wrote the Lease first."""
        return self._raw("PUT", f"{_LEASES}/namespaces/{namespace}/leases/{name}", body)

    def create_event(self, namespace: str, body: dict[str, Any]) -> None:
        self._raw("POST", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", body)

    def patch_daemonset(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """A strategic merge patch; a metadata.resourceVersion in it makes it conditional
        (409 when the DaemonSet changed since it was read). Only the readiness policy's
        `enforce` mode calls this, and its RBAC is a separate, opt-in Role."""
        return self._raw(
            "PATCH",
            f"/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}",
            body,
            content_type="application/strategic-merge-patch+json",
        )

    def _raw(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        """Below the typed API methods on purpose: they validate a dict body into the client's
        model and re-serialise its timestamps with isoformat(), which drops the fraction when
        microseconds are 0 and makes the API reject the MicroTime (kubernetes#89156)."""
        from kubernetes.client.exceptions import ApiException

        client = self._api_client
        headers = {"Accept": "application/json", "Content-Type": content_type}
        method, url, headers, body, _ = client.param_serialize(
            method=method,
            resource_path=path,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = client.call_api(
            method, url, header_params=headers, body=body, _request_timeout=self._timeout
        )
        response.read()
        if not 200 <= response.status < 300:
            raise ApiException(http_resp=response)
        result: dict[str, Any] = json.loads(response.data) if response.data else {}
        return result


class KubeReader:
    """A one-shot read of everything the planner needs (plan/apply); the controller keeps
    the same data current with watches instead."""

    def __init__(
        self,
        api_client: Any,
        config: KubeConfig,
        kube_proxy_namespace: str = "kube-system",
        kube_proxy_selector: str = "k8s-app=kube-proxy",
        read_cluster_uid: bool = True,
        daemonset_selector: str | None = "k8s-app=kube-proxy",
    ) -> None:
        self._api = KubeApi(
            api_client,
            config,
            kube_proxy_namespace,
            kube_proxy_selector,
            daemonset_selector or "",
        )
        self._read_cluster_uid = read_cluster_uid
        self._read_daemonsets = daemonset_selector is not None

    def read_snapshot(self) -> ClusterSnapshot:
        """A list that fails becomes a gap, so the planner withholds removals instead of
        acting on half a cluster."""
        gaps: list[str] = []
        try:
            self._api.detect_selectors(daemonsets=self._read_daemonsets)
        except Exception as exc:  # the list of the first alternative will say what is wrong
            log.warning("cannot tell how kube-proxy is labelled (%s)", describe(exc))
        nodes, nodes_complete = self._list(Resource.NODES, NodeList, gaps)
        services, _ = self._list(Resource.SERVICES, ServiceList, gaps)
        pods, pods_complete = self._list(Resource.KUBE_PROXY_PODS, PodList, gaps)
        return ClusterSnapshot(
            nodes=nodes,
            services=services,
            kube_proxy_pods=pods,
            kube_system_uid=read_kube_system_uid(self._api) if self._read_cluster_uid else None,
            gaps=tuple(gaps),
            # An undecodable Node or Pod may be the old kube-proxy: skew cannot be ruled out.
            versions_complete=nodes_complete and pods_complete,
            kube_proxy_daemonsets=self._daemonsets(),
            observed_at=time.time(),
            cloud_provider_uid=cloud_provider_uid_or_none(self._api),
        )

    def _daemonsets(self) -> tuple[DaemonSet, ...]:
        """Only the readiness review reads them: failing to is a warning, not a gap."""
        if not self._read_daemonsets:
            return ()
        try:
            listing = list_all(self._api, Resource.KUBE_PROXY_DAEMONSETS, DaemonSetList)
            return listing.items
        except Exception as exc:
            log.warning(
                "%s could not be listed (%s): the readiness review is skipped",
                Resource.KUBE_PROXY_DAEMONSETS,
                describe(exc),
            )
            return ()

    def _list(
        self, resource: Resource, model: type[ObjectList], gaps: list[str]
    ) -> tuple[tuple[Any, ...], bool]:
        """(what decoded, complete): a failed list or an undecodable object is a gap."""
        try:
            listing = list_all(self._api, resource, model)
        except Exception as exc:
            gaps.append(f"{resource} could not be listed: {describe(exc)}")
            return (), False
        if listing.undecodable:
            gaps.append(undecodable_gap(resource, listing.undecodable))
        return listing.items, not listing.undecodable


@dataclass(frozen=True)
class Listing:
    """A full list: what decoded, the list's resourceVersion, and what did not decode (each
    named; the caller makes them a gap rather than act as if they did not exist)."""

    items: tuple[Any, ...]
    resource_version: str
    undecodable: tuple[Undecodable, ...] = ()


def undecodable_gap(resource: Resource, undecodable: Sequence[Undecodable]) -> str:
    """One line for a gap or a log: how many, and the first by name with its problem."""
    first = undecodable[0]
    more = f" and {len(undecodable) - 1} more" if len(undecodable) > 1 else ""
    return (
        f"{resource}: {len(undecodable)} object(s) could not be decoded "
        f"({first.key}: {first.problem}{more})"
    )


def list_all(api: KubeApi, resource: Resource, model: type[ObjectList]) -> Listing:
    """All pages as one list. An expired continue token (410) restarts the list once from
    the beginning, as a fresh consistent read; any other failure raises."""
    for attempt in range(2):
        items: list[Any] = []
        undecodable: list[Undecodable] = []
        token = ""
        try:
            while True:
                page, bad = decode_page(model, api.list_page(resource, token))
                if not page.metadata.resource_version:
                    # Every API server list carries one. Without it, `{}` would read as a
                    # complete, empty list: for Nodes, the end of a version-skew fallback.
                    raise KubeReadError(
                        f"{resource}: a list answer without metadata.resourceVersion "
                        "(not a list from an API server)"
                    )
                items.extend(page.items)
                undecodable.extend(bad)
                token = page.metadata.continue_token
                if not token:
                    version = page.metadata.resource_version
                    return Listing(tuple(items), version, tuple(undecodable))
        except Exception as exc:
            if status_of(exc) == EXPIRED and attempt == 0:
                log.info("%s list expired mid-way; restarting it", resource)
                continue
            raise
    raise AssertionError("unreachable")


def read_kube_system_uid(api: KubeApi) -> str | None:
    """Only needed to derive the cluster id. Failing to read it is not a gap (a gap would
    withhold removals for ever) but an error: names cannot be known without it."""
    try:
        return Namespace.model_validate_json(api.read_namespace("kube-system")).metadata.uid or None
    except Exception as exc:
        raise KubeReadError(
            f"cannot read namespace kube-system to derive the cluster id ({describe(exc)}): "
            "allow `get` on namespaces, or set --cluster-id"
        ) from exc


# The cloud provider's cluster uid (kubernetes/cloud-provider-gcp providers/gce/
# gce_clusterid.go: UIDConfigMapName, UIDNamespace, UIDCluster): its node check is
# k8s-<uid>-node.
INGRESS_UID_NAMESPACE, INGRESS_UID_NAME, INGRESS_UID_KEY = "kube-system", "ingress-uid", "uid"


def read_cloud_provider_uid(api: KubeApi) -> str | None:
    """None when the ConfigMap is absent (no GCE cloud provider runs); raises when it cannot
    be read."""
    raw = api.read_config_map(INGRESS_UID_NAMESPACE, INGRESS_UID_NAME)
    if raw is None:
        return None
    return ConfigMap.model_validate_json(raw).data.get(INGRESS_UID_KEY) or None


def cloud_provider_uid_or_none(api: KubeApi) -> str | None:
    """Unreadable is not fatal: lbhc then recognises the cloud provider's node check only as
    an equivalent /healthz check, which is no less safe, so the failure is logged."""
    try:
        return read_cloud_provider_uid(api)
    except Exception as exc:
        log.warning(
            "cannot read ConfigMap %s/%s (%s): the cloud provider's node check is shown as an "
            "equivalent check; allow `get` on it (deploy/base/rbac.yaml)",
            INGRESS_UID_NAMESPACE,
            INGRESS_UID_NAME,
            describe(exc),
        )
        return None


def _alternatives(selector: str) -> list[str]:
    return [part.strip() for part in selector.split("|") if part.strip()] or [selector]


def _data(response: Any) -> bytes:
    data: bytes = response.data  # raw bytes with _preload_content=False
    return data


def status_of(exc: BaseException) -> int:
    return int(getattr(exc, "status", 0) or 0)


def describe(exc: BaseException) -> str:
    """Status and reason only: response headers or bodies could echo credentials."""
    if isinstance(exc, ValidationError):
        return f"unexpected response: {describe_validation_error(exc)}"
    status = status_of(exc)
    if status:
        return f"HTTP {status} {getattr(exc, 'reason', '')}".strip()
    return type(exc).__name__
