"""The two environments ("worlds") the e2e scenario runs in, behind one interface, so the
tests are written once.

Both keep the cluster in a kube-apiserver fake (`KubeFake`): lbhc reads it either as a
`--cluster-snapshot` file written from it (a dump: lbhc creates and attaches, but never
detaches or deletes on it) or through a kubeconfig (a complete view: removals allowed).

- `fake`: lbhc's sandbox. The Compute fake answers getHealth from real HTTP probes of
  emulated kube-proxies, time-scaled; "being deleted" is the autoscaler's taint, which the
  emulated kube-proxy reads.
- `gcp`: the project terraform/ provisioned. The cluster is built from its outputs and
  served locally; "being deleted" is the taint in the cluster plus the instance metadata
  attribute that makes the VM's /healthz fail.

In both, the load balancers (pools and forwarding rules) belong to someone else (the
cloud provider, terraform): nothing deletes them, and the tests check lbhc never changes
anything on them but its own check's attachment.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import logging
import os
import secrets
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from google.api_core.exceptions import GoogleAPICallError

from lbhc.cli import main
from lbhc.gce.client import GceClient
from lbhc.gce.config import DEFAULT_ENDPOINT, GceClientConfig
from lbhc.model.cloud import COMPUTE_URL_PREFIX, ForwardingRule, TargetPool
from lbhc.planner.names import target_pool_name
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from lbhc.sandbox.sandbox import NODE_TAG, Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec, kube_proxy_pod, node, node_name
from tests.builders import kube
from tests.e2e.gcp import (
    NODE_STATE_DELETING,
    NodeStateSwitch,
    Outputs,
    VmNode,
    cluster_objects,
    lbhc_runs_as,
    node_object,
)

# Not yet, rather than failed, while waiting on GCE: a getHealth refused while a check is
# still being set up (wait_for's `tolerate`).
TRANSIENT = (GoogleAPICallError,)
Object = dict[str, Any]

KUBE_PROXY_VERSION = "v1.31.4"  # serves /healthz and /livez, fails /healthz while draining
OLD_KUBE_PROXY_VERSION = "v1.6.13"  # before 1.7.2: no /healthz a health checker can reach
TAINT = "ToBeDeletedByClusterAutoscaler"
SNAPSHOT_KINDS = ("Namespace", "Node", "Service", "Pod", "DaemonSet")

FAKE_TIME_SCALE = 0.1  # GCE's 8 s interval takes 0.8 s; lbhc's own logic is unchanged
# Slack on top of interval x (unhealthyThreshold + 1) for the polled measurement: one poll
# period plus thread scheduling on a loaded 2-core runner. The prober's own transition time
# is also asserted, against the bound with no slack at all.
FAKE_DRAIN_MARGIN_SEC = 1.0
# GCE probes from several places, each on its own phase, and the VM learns of the metadata
# change through the metadata server; 30 s covers both plus the 2 s poll (README).
GCP_DRAIN_MARGIN_ENV = "LBHC_E2E_DRAIN_MARGIN_SEC"
GCP_DRAIN_MARGIN_SEC = 30.0


def resource_key(url: str) -> str:
    """The `projects/...` part of a Compute URL: links from any endpoint compare equal."""
    index = url.find("projects/")
    return url[index:] if index >= 0 else url


@dataclass(frozen=True)
class LbhcResult:
    argv: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def __str__(self) -> str:
        return (
            f"`lbhc {' '.join(self.argv)}` exited {self.code}\n"
            f"--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"
        )


@dataclass(frozen=True)
class LoadBalancerState:
    """What the tests compare of a pool or rule lbhc does not own."""

    description: str
    health_checks: tuple[str, ...] = ()
    instances: tuple[str, ...] = ()
    target: str = ""
    ip_address: str = ""


@contextlib.contextmanager
def _lbhc_environment() -> Iterator[None]:
    """A developer's own LBHC_* settings must not change what the suite tests."""
    saved = {
        k: v
        for k, v in os.environ.items()
        if k.startswith("LBHC_") and not k.startswith("LBHC_E2E")
    }
    for key in saved:
        del os.environ[key]
    try:
        yield
    finally:
        os.environ.update(saved)


@contextlib.contextmanager
def _root_logging_kept() -> Iterator[None]:
    """lbhc's CLI points the root logger at its stderr; give pytest's log capture back."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


class World:
    """One run's cluster, project and lbhc invocations. Subclasses fill in the GCE side."""

    name: str
    project: str
    region: str
    network: str
    node_tag: str
    gce_endpoint: str
    cluster_id: str | None  # None: derived by lbhc from the kube-system UID
    time_scale: float  # health checking runs this much faster than real time
    drain_margin: float  # seconds allowed on top of the drain bound
    poll_every: float  # seconds between getHealth polls
    settle_timeout: float  # for waits that are not measured
    nodes: tuple[str, ...]
    cluster_pool: str
    local_pool: str
    kube: KubeFake
    kubeconfig: Path
    gce: GceClient  # read-only observer

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._snapshots = 0
        self._marked: set[str] = set()
        self._added_nodes: list[str] = []
        self._check_name: str | None = None
        self._instance_urls: dict[str, str] = {}
        self.baseline: dict[str, LoadBalancerState] = {}

    # -- lbhc through its real CLI ---------------------------------------------------------

    def gce_flags(self) -> list[str]:
        flags = ["--project", self.project, "--region", self.region, "--network", self.network]
        flags += ["--node-tags", self.node_tag, "--gce-endpoint", self.gce_endpoint]
        return flags + (["--cluster-id", self.cluster_id] if self.cluster_id else [])

    def lbhc(self, command: str, *args: str, view: str = "snapshot") -> LbhcResult:
        """`lbhc COMMAND` in-process through `lbhc.cli.main`; `view` is "snapshot" (a
        `--cluster-snapshot` file written now) or "complete" (the kube-apiserver fake)."""
        if view == "snapshot":
            source = ["--cluster-snapshot", str(self.write_snapshot())]
        elif view == "complete":
            source = ["--kubeconfig", str(self.kubeconfig)]
        else:
            raise ValueError(f"view: {view!r}")
        argv = [command, *source, *self.gce_flags(), *args]
        out, err = io.StringIO(), io.StringIO()
        with (
            self.lbhc_credentials(),
            _lbhc_environment(),
            _root_logging_kept(),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            code = main(argv)
        return LbhcResult(tuple(argv), code, out.getvalue(), err.getvalue())

    def lbhc_credentials(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def apply(self, view: str = "snapshot") -> Any:
        """`lbhc apply --output json`; asserts every step succeeded; returns the JSON."""
        result = self.lbhc("apply", "--output", "json", view=view)
        assert result.code == 0, str(result)
        return result.json()

    def write_snapshot(self) -> Path:
        """What `kubectl get nodes,services,pods,daemonsets,namespaces -A -o json` prints."""
        items = [obj for kind in SNAPSHOT_KINDS for obj in self.kube.objects(kind)]
        if not any(self._is_api_service(obj) for obj in items):
            # kube-apiserver's bootstrap controller keeps default/kubernetes in every
            # cluster, so every real dump has a Service; the fake API server makes none.
            items.append(kube.kubernetes_service())
        self._snapshots += 1
        path = self.directory / f"cluster-{self._snapshots:02d}.json"
        document = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}
        path.write_text(json.dumps(document, indent=1), encoding="utf-8")
        return path

    @staticmethod
    def _is_api_service(obj: dict[str, Any]) -> bool:
        meta = obj.get("metadata", {})
        return obj.get("kind") == "Service" and (meta.get("namespace"), meta.get("name")) == (
            "default",
            "kubernetes",
        )

    @property
    def check_name(self) -> str:
        """The shared check's (and firewall's) name, as lbhc's own plan states it."""
        if self._check_name is None:
            result = self.lbhc("plan", "--output", "json")
            assert result.code == 0, str(result)
            self._check_name = str(result.json()["healthCheck"])
        return self._check_name

    @property
    def check_key(self) -> str:
        return f"projects/{self.project}/global/httpHealthChecks/{self.check_name}"

    # -- what GCE says -----------------------------------------------------------------------

    def pools(self) -> dict[str, TargetPool]:
        return {pool.name: pool for pool in self.gce.list_target_pools()}

    @functools.cached_property
    def _pools_client(self) -> Any:
        from google.cloud import compute_v1

        from lbhc.gce.config import make_credentials

        return compute_v1.TargetPoolsClient(
            credentials=make_credentials(self.gce_endpoint),
            client_options={"api_endpoint": self.gce_endpoint},
        )

    def pool_instances(self, name: str) -> tuple[str, ...]:
        """The pool's member VMs. lbhc never reads them (its lists ask for the fields it
        plans with), so the test reads them itself, with the library lbhc uses."""
        pool = self._pools_client.get(project=self.project, region=self.region, target_pool=name)
        return tuple(pool.instances)

    def carries_our_check(self, pool: TargetPool) -> bool:
        return any(resource_key(url) == self.check_key for url in pool.health_checks)

    def pools_carrying_check(self) -> set[str]:
        return {name for name, pool in self.pools().items() if self.carries_our_check(pool)}

    def instance_url(self, node_name_: str) -> str:
        """The node's VM as the Cluster pool lists it (what getHealth takes)."""
        if not self._instance_urls:
            members = self.pool_instances(self.cluster_pool)
            self._instance_urls = {url.rsplit("/", 1)[-1]: url for url in members}
        return self._instance_urls[node_name_]

    def lb_states(self, node_name_: str) -> set[str]:
        """GCE's view of one node in the Cluster pool (one state per forwarding rule IP)."""
        return set(self.gce.get_health(self.cluster_pool, self.instance_url(node_name_)))

    def load_balancers(self) -> dict[str, LoadBalancerState]:
        """The pools and forwarding rules of the two Services, keyed "pool/NAME", "rule/NAME"."""
        wanted = {self.cluster_pool, self.local_pool}
        found: dict[str, LoadBalancerState] = {}
        for name, pool in self.pools().items():
            if name in wanted:
                found[f"pool/{name}"] = LoadBalancerState(
                    pool.description,
                    tuple(sorted(resource_key(u) for u in pool.health_checks)),
                    tuple(sorted(resource_key(u) for u in self.pool_instances(name))),
                )
        rules: list[ForwardingRule] = self.gce.list_forwarding_rules()
        for rule in rules:
            if rule.name in wanted:
                found[f"rule/{rule.name}"] = LoadBalancerState(
                    rule.description, target=resource_key(rule.target), ip_address=rule.ip_address
                )
        return found

    def load_balancers_changed(self) -> dict[str, tuple[Any, Any]]:
        """Pools and rules that differ from the baseline taken before the test ran
        (before, now); a pool's own check counts, so leave it as you found it."""
        now = self.load_balancers()
        return {
            key: (before, now.get(key))
            for key, before in self.baseline.items()
            if now.get(key) != before
        }

    def mutation_log(self) -> list[tuple[str, str]] | None:
        """(method, path) of every GCE mutation lbhc made, in order; None where GCE keeps no
        such journal (the real project)."""
        return None

    def exact_transition(self, node_name_: str, state: str, since: float) -> float | None:
        """When GCE's checker itself turned the node `state` (monotonic clock), if known."""
        return None

    # -- the cluster's other actors ----------------------------------------------------------

    def mark_being_deleted(self, node_name_: str) -> float:
        """The autoscaler's taint on the Node (and, on a VM, its /healthz switch); returns
        the monotonic time from which the node's kube-proxy fails /healthz."""
        self.kube.taint(node_name_, TAINT, str(int(time.time())), "NoSchedule")
        self._marked.add(node_name_)
        return time.monotonic()

    def restore(self, node_name_: str) -> float:
        """Scale-down aborted: the taint (and switch) removed; returns when it took effect."""
        self.kube.untaint(node_name_, TAINT)
        self._marked.discard(node_name_)
        return time.monotonic()

    def add_old_node(self) -> str:
        """A node joins whose kube-proxy Pod runs OLD_KUBE_PROXY_VERSION; returns its name."""
        node_obj, pod = self._old_node_objects(len(self.nodes) + len(self._added_nodes))
        self.kube.upsert(node_obj)
        self.kube.upsert(pod)
        name = str(node_obj["metadata"]["name"])
        self._added_nodes.append(name)
        return name

    def _old_node_objects(self, index: int) -> tuple[Object, Object]:
        raise NotImplementedError

    def remove_node(self, name: str) -> None:
        with contextlib.suppress(KeyError):
            self.kube.delete("Pod", "kube-system", f"kube-proxy-{name}")
        with contextlib.suppress(KeyError):
            self.kube.delete("Node", None, name)
        if name in self._added_nodes:
            self._added_nodes.remove(name)

    def mark_services_deleted(self) -> None:
        """`kubectl delete service` on both: with the cloud provider's cleanup finalizer they
        stay, marked deleted, until someone removes the load balancer; here nobody does."""
        for obj in self.kube.objects("Service"):
            meta = obj["metadata"]
            if not meta.get("deletionTimestamp"):
                self.kube.delete("Service", meta["namespace"], meta["name"])

    # -- clean-up ------------------------------------------------------------------------------

    def leftovers(self) -> list[str]:
        found = [f"target pool {name} carries it" for name in sorted(self.pools_carrying_check())]
        if self.gce.get_http_health_check(self.check_name) is not None:
            found.append(f"HttpHealthCheck {self.check_name}")
        if self.gce.get_firewall(self.check_name) is not None:
            found.append(f"Firewall {self.check_name}")
        return found

    def clean_up(self) -> list[str]:
        """Run after every test, passed or failed: restore what was marked, then lbhc apply on
        a complete view where the Services are marked deleted, until nothing of this run is
        left. What lbhc fails to remove is removed directly and reported. Returns problems."""
        problems: list[str] = []
        for name in sorted(self._marked):
            try:
                self.restore(name)
            except Exception as exc:
                problems.append(f"restoring {name}: {type(exc).__name__}: {exc}")
        for name in list(self._added_nodes):
            self.remove_node(name)
        self.mark_services_deleted()
        result: LbhcResult | None = None
        for _ in range(3):
            result = self.lbhc("apply", "--output", "json", view="complete")
            if result.code == 0 and not self.leftovers():
                break
        left = self.leftovers()
        if left:
            problems.append(
                f"lbhc left {left} after 3 passes on a complete view; removed directly.\n{result}"
            )
            self._remove_directly()
        changed = self.load_balancers_changed()
        if changed:
            problems.append(f"pools or rules lbhc does not own changed: {changed}")
        return problems

    def writer(self) -> GceClient:
        raise NotImplementedError

    def _remove_directly(self) -> None:
        """Last resort, only for this run's own resources (named by its cluster id)."""
        writer = self.writer()
        url = self.check_key
        for pool in sorted(self.pools_carrying_check()):
            writer.remove_health_check(pool, COMPUTE_URL_PREFIX + url)
        if writer.get_http_health_check(self.check_name) is not None:
            writer.delete_http_health_check(self.check_name)
        if writer.get_firewall(self.check_name) is not None:
            writer.delete_firewall(self.check_name)

    def close(self) -> None:
        raise NotImplementedError


class FakeWorld(World):
    name = "fake"

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        # web-0 Cluster, local-1 Local, pools made without a check: terraform/'s project, which
        # this world stands in for, is the legacy world (today's is tests/sandbox's).
        spec = SandboxSpec(nodes=3, services=2, local_services=1, cloud_provider="legacy")
        options = SandboxOptions(
            spec=spec, time_scale=FAKE_TIME_SCALE, operation_latency=0.0, directory=directory
        )
        self.sandbox = Sandbox(options).start()
        try:
            self._setup(spec)
        except BaseException:
            self.sandbox.close()
            raise

    def _setup(self, spec: SandboxSpec) -> None:
        sandbox = self.sandbox
        # Its service controller would delete a deleted Service's pool and rule; in the real
        # project terraform owns them and nobody does. Stopped, both worlds keep their pools.
        assert sandbox.service_controller is not None
        sandbox.service_controller.close()
        self.spec = spec
        self.project, self.region, self.network = spec.project, spec.region, "default"
        self.node_tag, self.gce_endpoint, self.cluster_id = NODE_TAG, sandbox.compute_url, None
        self.time_scale, self.drain_margin = FAKE_TIME_SCALE, FAKE_DRAIN_MARGIN_SEC
        self.poll_every, self.settle_timeout = 0.05, 20.0
        self.kube, self.kubeconfig = sandbox.kube, sandbox.kubeconfig
        self.nodes = tuple(n["metadata"]["name"] for n in self.kube.objects("Node"))
        pools = {
            s["spec"]["externalTrafficPolicy"]: target_pool_name(s["metadata"]["uid"])
            for s in self.kube.objects("Service")
        }
        self.cluster_pool, self.local_pool = pools["Cluster"], pools["Local"]
        config = GceClientConfig(
            project=self.project,
            region=self.region,
            endpoint=self.gce_endpoint,
            read_only=True,
            client_id="lbhc-e2e-observer",
            reads_per_second=1000,
        )
        self.gce = GceClient(config)
        self.baseline = self.load_balancers()

    def _old_node_objects(self, index: int) -> tuple[Object, Object]:
        version = OLD_KUBE_PROXY_VERSION
        return (
            node(self.spec, index, version),
            kube_proxy_pod(node_name(index), version, "/healthz", owned=False),
        )

    def mutation_log(self) -> list[tuple[str, str]] | None:
        # lbhc's CLI sends no client id; the suite's own clients do.
        return [
            (e.method, e.path)
            for e in self.sandbox.compute.mutating_requests()
            if e.client_id == "" and e.status < 300
        ]

    def exact_transition(self, node_name_: str, state: str, since: float) -> float | None:
        assert self.sandbox.prober is not None
        times = [
            t
            for t, s in self.sandbox.prober.transitions(self.instance_url(node_name_))
            if s == state and t >= since
        ]
        return times[0] if times else None

    def writer(self) -> GceClient:
        config = GceClientConfig(
            project=self.project,
            region=self.region,
            endpoint=self.gce_endpoint,
            client_id="lbhc-e2e-janitor",
        )
        return GceClient(config)

    def close(self) -> None:
        self.sandbox.close()


class NodeState(Protocol):
    """Reads and sets a VM's node-state metadata attribute (gcp.NodeStateSwitch)."""

    def get(self, vm: VmNode) -> str | None: ...
    def set(self, vm: VmNode, value: str | None) -> None: ...


@dataclass
class GcpProject:
    """The session's handle on the real project (see conftest.gcp_project)."""

    outputs: Outputs
    lbhc_credentials: Any  # the controller's service account (impersonated), or ADC
    switch: NodeState  # with the runner's own ADC: the controller may not set metadata
    gce: GceClient  # read-only observer, as the controller (the runner may not read)
    endpoint: str = DEFAULT_ENDPOINT

    @classmethod
    def connect(cls, outputs: Outputs, adc: Any, lbhc_credentials: Any) -> GcpProject:
        config = GceClientConfig(
            project=outputs.project_id,
            region=outputs.region,
            read_only=True,
            client_id="lbhc-e2e-observer",
            reads_per_second=5,  # getHealth polls: be polite to the project's quota
        )
        switch = NodeStateSwitch(adc, outputs.project_id, outputs.node_state_metadata_key)
        return cls(
            outputs, lbhc_credentials, switch, GceClient(config, credentials=lbhc_credentials)
        )


class GcpWorld(World):
    name = "gcp"

    def __init__(self, gcp: GcpProject, directory: Path) -> None:
        super().__init__(directory)
        out = gcp.outputs
        self.gcp, self.outputs = gcp, out
        self.project, self.region, self.network = out.project_id, out.region, out.network
        self.node_tag, self.gce_endpoint = out.node_tag, gcp.endpoint
        # Unique per run: concurrent or leaked runs can never share (or delete) a check.
        self.cluster_id = f"e2e-{secrets.token_hex(4)}"
        self.time_scale, self.poll_every, self.settle_timeout = 1.0, 2.0, 300.0
        self.drain_margin = float(os.environ.get(GCP_DRAIN_MARGIN_ENV, GCP_DRAIN_MARGIN_SEC))
        self.nodes = tuple(vm.name for vm in out.nodes)
        self._vms = {vm.name: vm for vm in out.nodes}
        self.cluster_pool = out.cluster_service.target_pool
        self.local_pool = out.local_service.target_pool
        self.gce = gcp.gce
        self.kube = KubeFake()
        for obj in cluster_objects(out, str(uuid.uuid4()), KUBE_PROXY_VERSION):
            self.kube.upsert(obj)
        self.server = KubeFakeServer(self.kube).start()
        try:
            self.kubeconfig = self.server.write_kubeconfig(directory / "kubeconfig")
            self._preflight()
        except BaseException:
            self.server.stop()
            raise

    def _preflight(self) -> None:
        out = self.outputs
        for service in (out.cluster_service, out.local_service):
            assert service.target_pool == target_pool_name(service.uid), (
                f"terraform/: pool {service.target_pool} is not named after Service UID "
                f"{service.uid} as the cloud provider names it"
            )
        for vm in out.nodes:  # a killed run may have left a node "being deleted"
            if self.gcp.switch.get(vm) is not None:
                self.gcp.switch.set(vm, None)
        self.baseline = self.load_balancers()
        missing = {f"pool/{self.cluster_pool}", f"pool/{self.local_pool}"} - set(self.baseline)
        missing |= {f"rule/{s.forwarding_rule}" for s in (out.cluster_service, out.local_service)}
        missing -= set(self.baseline)
        assert not missing, f"terraform/ resources not found in {self.region}: {sorted(missing)}"
        carried = self.baseline[f"pool/{self.cluster_pool}"].health_checks
        assert not carried, (
            f"target pool {self.cluster_pool} already carries {carried}: another e2e run is "
            "in progress, or one was killed before its clean-up. Runs against one project "
            "must not overlap; see tests/e2e/README.md to remove a leftover check"
        )

    def lbhc_credentials(self) -> contextlib.AbstractContextManager[None]:
        return lbhc_runs_as(self.gcp.lbhc_credentials, self.project)

    def mark_being_deleted(self, node_name_: str) -> float:
        self._marked.add(node_name_)
        self.gcp.switch.set(self._vms[node_name_], NODE_STATE_DELETING)
        effective = time.monotonic()  # the attribute is set (its operation DONE)
        super().mark_being_deleted(node_name_)
        return effective

    def restore(self, node_name_: str) -> float:
        self.gcp.switch.set(self._vms[node_name_], None)
        effective = time.monotonic()
        super().restore(node_name_)
        return effective

    def _old_node_objects(self, index: int) -> tuple[Object, Object]:
        """A Node object only: no VM behind it (nothing probes it; lbhc reads its Pod)."""
        vm = VmNode(f"lbhc-e2e-old-{self.cluster_id}-{index}", self.outputs.zone, "192.0.2.10")
        version = OLD_KUBE_PROXY_VERSION
        return (
            node_object(vm.name, self.project, vm.zone, vm.internal_ip, version),
            kube_proxy_pod(vm.name, version, "/healthz", owned=False),
        )

    def writer(self) -> GceClient:
        config = GceClientConfig(
            project=self.project,
            region=self.region,
            endpoint=self.gce_endpoint,
            client_id="lbhc-e2e-janitor",
        )
        return GceClient(config, credentials=self.gcp.lbhc_credentials)

    def close(self) -> None:
        self.server.stop()
