"""KubeApi: the one module that talks to the Kubernetes API; KubeReader reads through it.

Lists are requested raw (`_preload_content=False`) and decoded straight into lbhc's
projections: the client's own models cost ~10x the memory and 4x the time (docs/benchmarks.md, 4).
Every request has a client-side timeout so a half-open connection cannot hang a reconcile.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from lbhc.errors import SetupError, connect_failure, timeout_kind
from lbhc.kube.cache import ClusterCache
from lbhc.kube.config import MIN_CONNECTIONS, KubeConfig
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
from lbhc.kube.resources import Resource, undecodable_gap
from lbhc.model.cluster import ClusterSnapshot, ConfigMap, DaemonSet, Namespace
from lbhc.planner.replacement import (
    KNOWN_REPLACEMENT_NAMES,
    REPLACEMENT_NAMESPACE,
    first_replacement,
)

log = logging.getLogger(__name__)
PAGE_SIZE = 500
_LEASES = "/apis/coordination.k8s.io/v1"
EXPIRED = 410


class KubeReadError(RuntimeError):
    """Something the pass cannot do without could not be read."""


class KubeConfigError(SetupError):
    """No client can be made from the kubeconfig (or the in-cluster config): none found, not
    a kubeconfig, no such context. Fixed with --kubeconfig, --context or the file: exit 2."""


@dataclass(frozen=True)
class KubeTarget:
    """Which API server a client talks to and where that came from, for error lines."""

    server: str
    origin: str  # "context 'x' of kubeconfig /p", "in-cluster config", "a URL given directly"

    def __str__(self) -> str:
        # A server URL with user:password in it would put them in an error line.
        server = re.sub(r"//[^/@\s]*@", "//", self.server)
        return f"{server} ({self.origin})"


def make_api_client(config: KubeConfig) -> Any:
    """In-cluster when running in a Pod and no kubeconfig is named; kubeconfig otherwise."""
    return connect(config)[0]


def connect(config: KubeConfig) -> tuple[Any, KubeTarget]:
    """A client and what it talks to. A kubeconfig that is missing, not a kubeconfig, or
    without the context asked for raises KubeConfigError, one line naming the file."""
    import os

    from kubernetes import client

    configuration = client.Configuration()
    if config.host:
        configuration.host = config.host
        target = KubeTarget(config.host, "a URL given directly")
    elif config.kubeconfig or config.context or "KUBERNETES_SERVICE_HOST" not in os.environ:
        target = _load_kubeconfig(config, configuration)
    else:
        target = _load_in_cluster(configuration)
    # urllib3 would retry a failed request 3 times on its own, each retry a WARNING line of
    # its own and invisible to the caller, so a request could take 4 times its timeouts.
    # One request is one attempt; lbhc's loops decide what is retried, and when.
    configuration.retries = 0
    configuration.connection_pool_maxsize = max(
        configuration.connection_pool_maxsize, MIN_CONNECTIONS
    )
    return client.ApiClient(configuration), target


def _load_in_cluster(configuration: Any) -> KubeTarget:
    from kubernetes import config as kube_config

    try:
        kube_config.load_incluster_config(client_configuration=configuration)
    except kube_config.ConfigException as exc:
        raise KubeConfigError(
            f"in-cluster config not usable ({exc}): run with the Pod's ServiceAccount token "
            "mounted (automountServiceAccountToken), or pass --kubeconfig"
        ) from None
    return KubeTarget(configuration.host, "in-cluster config")


def _load_kubeconfig(config: KubeConfig, configuration: Any) -> KubeTarget:
    """What kubectl would read: the kubeconfig setting, else every file of $KUBECONFIG, else
    ~/.kube/config. Each file is checked first, since the client fails on a non-mapping
    with a traceback and reads $KUBECONFIG only once, when it is imported."""
    import os

    from kubernetes import config as kube_config

    if config.kubeconfig:
        named, paths = f"kubeconfig {config.kubeconfig}", [config.kubeconfig]
    elif os.environ.get("KUBECONFIG"):
        value = os.environ["KUBECONFIG"]
        named, paths = f"KUBECONFIG={value}", [p for p in value.split(os.pathsep) if p]
    else:
        named, paths = "~/.kube/config", ["~/.kube/config"]
    found = [p for p in paths if os.path.exists(os.path.expanduser(p))]
    if not found:
        raise KubeConfigError(_no_kubeconfig(config, named))
    documents = [(path, _read_kubeconfig(path)) for path in found]
    contexts = [
        c["name"]
        for _, doc in documents
        for c in (doc.get("contexts") or [])
        if isinstance(c, dict) and isinstance(c.get("name"), str)
    ]
    current = next(
        (d["current-context"] for _, d in reversed(documents) if d.get("current-context")), None
    )
    context = config.context or current
    where = found[0] if len(found) == 1 else named
    try:
        kube_config.load_kube_config(
            config_file=os.pathsep.join(found),
            context=config.context,
            client_configuration=configuration,
        )
    except kube_config.ConfigException as exc:
        raise KubeConfigError(_bad_kubeconfig(where, context, contexts, str(exc))) from None
    except (TypeError, AttributeError, KeyError, ValueError) as exc:
        # The client indexes the file's structure without checking it.
        raise KubeConfigError(
            f"kubeconfig {where} is malformed (reading context {context!r}: "
            f"{type(exc).__name__} {exc}): expected a kubeconfig as `kubectl config view "
            "--raw` writes it"
        ) from None
    return KubeTarget(configuration.host, f"context {context!r} of kubeconfig {where}")


def _no_kubeconfig(config: KubeConfig, named: str) -> str:
    import os

    if config.kubeconfig:  # settings check it exists; it went away since
        return f"{named}: no such file; pass --kubeconfig with the path of a kubeconfig file"
    if named.startswith("KUBECONFIG="):
        looked = f"{named} names no file that exists"
    else:
        looked = f"{os.path.expanduser('~/.kube/config')} does not exist and KUBECONFIG is unset"
    return (
        f"no kubeconfig: {looked}, and in-cluster config is not available "
        "(KUBERNETES_SERVICE_HOST is not set); pass --kubeconfig or set KUBECONFIG"
    )


def _read_kubeconfig(path: str) -> dict[str, Any]:
    import os

    import yaml

    try:
        with open(os.path.expanduser(path), encoding="utf-8") as file:
            document = yaml.safe_load(file)
    except yaml.YAMLError as exc:  # the client lets a parse error escape as a traceback
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark is not None else ""
        raise KubeConfigError(
            f"kubeconfig {path} is not valid YAML{line}: expected a kubeconfig file "
            "as `kubectl config view --raw` writes it"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KubeConfigError(f"kubeconfig {path} cannot be read: {exc}") from None
    if document is None:
        raise KubeConfigError(f"kubeconfig {path} is empty: pass --kubeconfig with another")
    if not isinstance(document, dict):
        kinds: dict[type, str] = {list: "a list", str: "a string"}
        kind = kinds.get(type(document), type(document).__name__)
        raise KubeConfigError(
            f"kubeconfig {path} is not a kubeconfig: expected a YAML mapping (apiVersion, "
            f"clusters, contexts, users), got {kind}"
        )
    return document


def _bad_kubeconfig(where: str, context: str | None, contexts: list[str], said: str) -> str:
    """The client's ConfigException, as what is wrong and which flag or file fixes it."""
    listed = f" (it has: {', '.join(contexts)})" if contexts else " (it has none)"
    if "current-context" in said and context is None:
        return f"kubeconfig {where} sets no current-context: pass --context{listed}"
    missing = re.search(r"Expected object with name (.*) in .*?(\w+) list", said)
    if missing and missing.group(2) == "contexts":
        return f"kubeconfig {where} has no context {missing.group(1)!r}{listed}: pass --context"
    if missing:
        kind = missing.group(2).removesuffix("s")
        return (
            f"context {context!r} of kubeconfig {where} names {kind} {missing.group(1)!r}, "
            f"which the file does not define: fix the file or pass another --context{listed}"
        )
    said = " ".join(said.split())[:300]
    return f"kubeconfig {where}, context {context!r}: {said}: fix the file or pass --context"


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
        target: KubeTarget | None = None,
    ) -> None:
        """The selectors may be alternatives separated by `|`: the first is used until
        detect_selectors() has found the one that selects something. `target`: what
        `api_client` talks to, named when a read fails."""
        from kubernetes import client

        self.config = config
        self.target = target
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

    @property
    def namespace(self) -> str:
        return self._namespace

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

    def daemonset_exists(self, namespace: str, name: str) -> bool:
        """A `list` field-selected by name (one item at most), not a `get`: lbhc's Role may
        already list DaemonSets in kube-system, and a missing one is no error."""
        response = self._apps.list_namespaced_daemon_set(
            namespace,
            field_selector=f"metadata.name={name}",
            limit=1,
            _preload_content=False,
            _request_timeout=self._timeout,
        )
        return bool(json.loads(_data(response) or b"{}").get("items"))

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

    def patch_node_annotation(self, name: str, key: str, value: str | None) -> dict[str, Any]:
        """Set (or, with None, remove) one annotation of a Node with a JSON merge patch that
        names nothing else. Only hold.deletion `on` calls this; its RBAC (`patch` on nodes)
        and the admission policy that confines it to that one annotation are opt-in
        (deploy/components/hold-deletion)."""
        body = {"metadata": {"annotations": {key: value}}}
        return self._raw(
            "PATCH", f"/api/v1/nodes/{name}", body, content_type="application/merge-patch+json"
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
        target: KubeTarget | None = None,
    ) -> None:
        """`target`: what `api_client` talks to, named when a read fails."""
        self._target = target
        self._api = KubeApi(
            api_client,
            config,
            kube_proxy_namespace,
            kube_proxy_selector,
            daemonset_selector or "",
            target,
        )
        self._read_cluster_uid = read_cluster_uid
        self._read_daemonsets = daemonset_selector is not None

    def read_snapshot(self, *, complete: bool = False) -> ClusterSnapshot:
        """Every list once, into a ClusterCache whose snapshot is the one the controller's
        watch cache would give for the same objects: `plan`, `status` and `run` assemble
        the planner's view in one place. A list that fails is a gap, so the planner
        withholds removals instead of acting on half a cluster. `complete`: a list of Nodes,
        Services or kube-proxy Pods that fails, or an object in one that does not decode,
        raises KubeReadError instead (one line: what, from which server, why): a one-shot
        command shows no plan or status from a view it could not read."""
        kube_system_uid = read_kube_system_uid(self._api) if self._read_cluster_uid else None
        cache = ClusterCache(kube_system_uid)
        self._fill(cache, Resource.NODES, NodeList, complete)
        self._fill(cache, Resource.SERVICES, ServiceList, complete)
        try:
            self._api.detect_selectors(daemonsets=self._read_daemonsets)
        except Exception as exc:  # the list of the first alternative will say what is wrong
            if complete:
                raise KubeReadError(self._unreadable(Resource.KUBE_PROXY_PODS, exc)) from exc
            log.warning("cannot tell how kube-proxy is labelled (%s)", describe_kube_error(exc))
        self._fill(cache, Resource.KUBE_PROXY_PODS, PodList, complete)
        cache.replace(Resource.KUBE_PROXY_DAEMONSETS, self._daemonsets())
        snapshot = cache.snapshot()
        return dataclasses.replace(
            snapshot,
            cloud_provider_uid=cloud_provider_uid_or_none(self._api),
            kube_proxy_replacement=kube_proxy_replacement_or_none(self._api),
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
                describe_kube_error(exc),
            )
            return ()

    def _fill(
        self, cache: ClusterCache, resource: Resource, model: type[ObjectList], complete: bool
    ) -> None:
        """The list into the cache: what decoded, and what did not as a gap; a failed list
        is a gap too, or with `complete` an error."""
        try:
            listing = list_all(self._api, resource, model)
        except Exception as exc:
            if complete:
                raise KubeReadError(self._unreadable(resource, exc)) from exc
            cache.mark_problem(resource, f"could not be listed: {describe_kube_error(exc)}")
            return
        if listing.undecodable and complete:
            gap = undecodable_gap(resource, listing.undecodable)
            raise KubeReadError(
                f"cannot read the cluster from {self._where()}: {gap}; lbhc shows nothing "
                "from a partial view (the controller withholds removals meanwhile)"
            )
        cache.replace(resource, listing.items, {u.key: u.problem for u in listing.undecodable})

    def _where(self) -> str:
        return where(self._target)

    def _unreadable(self, resource: Resource, exc: BaseException) -> str:
        api = self._api
        what = (
            f"kube-proxy Pods in {api.namespace} (selected by {api.kube_proxy_selector})"
            if resource is Resource.KUBE_PROXY_PODS
            else str(resource)
        )
        why, fix = explain(exc, self._target, f"list {resource.rbac_name}", api.config)
        return f"cannot list {what} from {self._where()}: {why}; {fix}"


@dataclass(frozen=True)
class Listing:
    """A full list: what decoded, the list's resourceVersion, and what did not decode (each
    named; the caller makes them a gap rather than act as if they did not exist)."""

    items: tuple[Any, ...]
    resource_version: str
    undecodable: tuple[Undecodable, ...] = ()


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
        why, fix = explain(exc, api.target, "get namespaces", api.config)
        raise KubeReadError(
            f"cannot read namespace kube-system from {where(api.target)} to derive the cluster "
            f"id: {why}; {fix}, or set --cluster-id"
        ) from exc


# The cloud provider's cluster id (kubernetes/cloud-provider-gcp providers/gce/
# gce_clusterid.go: UIDConfigMapName, UIDNamespace, UIDCluster, UIDProvider): its node check
# is k8s-<id>-node.
INGRESS_UID_NAMESPACE, INGRESS_UID_NAME = "kube-system", "ingress-uid"
INGRESS_UID_KEY, INGRESS_PROVIDER_UID_KEY = "uid", "provider-uid"


def cloud_provider_cluster_id(data: Mapping[str, str]) -> str | None:
    """The id the cloud provider names its node check after, read as gce_clusterid.go
    ClusterID.GetID reads the ConfigMap: `provider-uid` when that key is present, else
    `uid`; with no `uid` key at all GetID fails ("Could not retrieve cluster id") and no
    load balancer is made, so there is no id. An empty id names no check: None too."""
    if INGRESS_UID_KEY not in data:
        return None
    return data.get(INGRESS_PROVIDER_UID_KEY, data[INGRESS_UID_KEY]) or None


def read_cloud_provider_uid(api: KubeApi) -> str | None:
    """None when the ConfigMap is absent (no GCE cloud provider runs); raises when it cannot
    be read."""
    raw = api.read_config_map(INGRESS_UID_NAMESPACE, INGRESS_UID_NAME)
    if raw is None:
        return None
    return cloud_provider_cluster_id(ConfigMap.model_validate_json(raw).data)


def cloud_provider_uid_or_none(api: KubeApi) -> str | None:
    """Unreadable is not fatal: lbhc then recognises the cloud provider's node check only as
    an equivalent /healthz check, which is no less safe, so the failure is logged."""
    try:
        return read_cloud_provider_uid(api)
    except Exception as exc:
        forbidden = status_of(exc) in (401, 403)
        log.warning(
            "cannot read ConfigMap %s/%s (%s): the cloud provider's node check is shown as an "
            "equivalent check%s",
            INGRESS_UID_NAMESPACE,
            INGRESS_UID_NAME,
            describe_kube_error(exc),
            "; allow `get` on it (deploy/base/rbac.yaml)" if forbidden else "",
        )
        return None


def read_kube_proxy_replacement(api: KubeApi) -> str | None:
    """The first known kube-proxy replacement DaemonSet in kube-system (`anetd`, `cilium`:
    lbhc/planner/replacement.py), None when there is none; raises when it cannot be read."""
    return first_replacement(functools.partial(api.daemonset_exists, REPLACEMENT_NAMESPACE))


def kube_proxy_replacement_or_none(api: KubeApi) -> str | None:
    """Unreadable is not fatal: lbhc then judges nodes without kube-proxy as before (the
    kubelet's hint, the fallback policies), so the failure is logged."""
    try:
        return read_kube_proxy_replacement(api)
    except Exception as exc:
        forbidden = status_of(exc) in (401, 403)
        log.warning(
            "cannot look for a kube-proxy replacement (DaemonSets %s in %s: %s)%s",
            ", ".join(KNOWN_REPLACEMENT_NAMES),
            REPLACEMENT_NAMESPACE,
            describe_kube_error(exc),
            "; allow `list` on daemonsets there (deploy/base/rbac-read.yaml)" if forbidden else "",
        )
        return None


def _alternatives(selector: str) -> list[str]:
    return [part.strip() for part in selector.split("|") if part.strip()] or [selector]


def _data(response: Any) -> bytes:
    data: bytes = response.data  # raw bytes with _preload_content=False
    return data


def status_of(exc: BaseException) -> int:
    return int(getattr(exc, "status", 0) or 0)


def describe_kube_error(exc: BaseException) -> str:
    """Status and reason only: response headers or bodies could echo credentials."""
    if isinstance(exc, ValidationError):
        return f"unexpected response: {describe_validation_error(exc)}"
    status = status_of(exc)
    if status:
        return f"HTTP {status} {getattr(exc, 'reason', '')}".strip()
    kind = timeout_kind(exc)
    if kind is not None:
        return f"no answer in time ({kind} timeout)"
    # urllib3's own text names the host and port, and nothing else of the request.
    return connect_failure(exc) or type(exc).__name__


def where(target: KubeTarget | None) -> str:
    """The server a failed request went to, and where that came from (the kubeconfig and its
    context, the in-cluster config), for an error line; never a credential."""
    return f"the Kubernetes API server at {target}" if target else "the cluster"


def explain(
    exc: BaseException, target: KubeTarget | None, verb: str, config: KubeConfig | None = None
) -> tuple[str, str]:
    """(why, what to check) for a request that failed, each a clause of one line. Only a
    401 or 403 gets an RBAC or credentials hint: for a server that cannot be reached, that
    hint would send the reader the wrong way. `verb` is the RBAC verb and resource;
    `config`, the timeouts the request had."""
    origin = target.origin if target else "the kubeconfig"
    elsewhere = "or pass --kubeconfig / --context to use another cluster"
    status = status_of(exc)
    if status == 401:
        return (
            "HTTP 401 Unauthorized (the credentials were refused)",
            "renew them (an expired token? `kubectl get nodes` with the same kubeconfig and "
            "context tells)",
        )
    if status == 403:
        said = _status_message(exc)
        return (
            f"HTTP 403 Forbidden{f' ({said})' if said else ''}",
            f"allow `{verb}` to lbhc's identity (deploy/base/rbac.yaml)",
        )
    if status == 404:
        return "HTTP 404 Not Found", f"is the server of {origin} a Kubernetes API server?"
    if status:
        return describe_kube_error(exc), "the API server failed; try again"
    if isinstance(exc, ValidationError | KubeReadError):
        why = describe_kube_error(exc) if isinstance(exc, ValidationError) else str(exc)
        return why, f"is the server of {origin} a Kubernetes API server?"
    tls = _tls_failure(exc)
    if tls:
        return tls, f"check the cluster's certificate-authority in {origin}"
    timeout, setting = _timed_out(exc, config or KubeConfig())
    if timeout:
        return timeout, (
            f"check that the API server is up and reachable from here ({setting} sets how "
            f"long lbhc waits), {elsewhere}"
        )
    reason = connect_failure(exc)
    if reason:
        return reason, f"check that the cluster is up and reachable from here, {elsewhere}"
    if _cut(exc):
        return "the connection was cut mid-answer", "try again"
    why = describe_kube_error(exc)
    return why, f"check that the cluster is up and reachable from here, {elsewhere}"


def _status_message(exc: BaseException) -> str:
    """The message of the Status object an error answer carries (it names the user and the
    permission; never a credential), bounded."""
    body = getattr(exc, "body", None)
    try:
        message = json.loads(body).get("message", "") if body else ""
    except (ValueError, AttributeError, TypeError):
        return ""
    return " ".join(str(message).split())[:300]


def _tls_failure(exc: BaseException) -> str:
    """The kubernetes client turns a TLS failure into ApiException(status=0, reason=
    "SSLError\\n...")."""
    reason = getattr(exc, "reason", None)
    if isinstance(reason, str) and reason.startswith("SSLError"):
        detail = " ".join(reason.split("\n", 1)[-1].split())
        return f"TLS handshake failed ({detail[:200]})"
    return ""


def _timed_out(exc: BaseException, config: KubeConfig) -> tuple[str, str]:
    """When a request ran out of time: which timeout and how long it was, and its setting;
    ("", "") otherwise."""
    kind = timeout_kind(exc)
    if kind == "connect":
        why = f"no connection within {config.connect_timeout_sec:g} s (connect timeout)"
        return why, "kube.connect_timeout_sec"
    if kind == "read":
        why = f"no answer within {config.read_timeout_sec:g} s (read timeout)"
        return why, "kube.request_timeout_sec"
    return "", ""


def _cut(exc: BaseException) -> bool:
    from urllib3 import exceptions as u3

    current: BaseException | None = exc
    while current is not None:
        if isinstance(current, u3.ProtocolError):
            return True
        current = current.reason if isinstance(current, u3.MaxRetryError) else current.__cause__
    return False
