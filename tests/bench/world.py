"""A cluster and a GCE project at benchmark scale, served from a child process.

The kube-apiserver fake and the Compute fake run in a process of their own (spawned, so it
starts clean), as the real API servers run elsewhere: their work (building pages, encoding
JSON) does not share the benchmark process's GIL or count in its CPU time. The benchmark
talks to them over HTTP like the controller does, and drives and inspects them through a
small command pipe (what the fakes' Python API offers, remotely).

Objects are the realistic ones from `objects.py` (managedFields, conditions, images). Target
pools hold every node as an instance, as the cloud provider's service controller builds them
(`pool_instances` can cap that, to show what a pool read costs without the instance lists).
Times that cross the pipe are `time.monotonic()`: CLOCK_MONOTONIC is one clock for every
process on Linux, so they compare with the benchmark's own.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import (  # type: ignore[attr-defined]
    Client,
    Connection,
    answer_challenge,
    deliver_challenge,
)
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from lbhc.model.cloud import http_health_check_url
from lbhc.planner.names import cluster_id_from_uid, shared_resource_name
from lbhc.settings import Settings, load_settings
from tests.bench import objects
from tests.worlds import compute_fake, seed_cluster

PROJECT, REGION = objects.PROJECT, "us-central1"
NODE_TAG = "gke-bench-node"
BASE_NAME = "k8s-l4-healthcheck"
KUBE_SYSTEM_UID = str(uuid.uuid5(uuid.NAMESPACE_DNS, "bench/kube-system"))
CHECK_NAME = shared_resource_name(BASE_NAME, cluster_id_from_uid(KUBE_SYSTEM_UID))
CHECK_URL = http_health_check_url(PROJECT, CHECK_NAME)
ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = (
    "httpHealthChecks",
    "firewalls",
    "targetPools",
    "forwardingRules",
    "operations",
    "networks",
    "backendServices",
    "healthChecks",
    "instanceGroups",
)


def child_env() -> dict[str, str]:
    """Environment for a child `python -m tests.bench...`: finds this checkout's modules."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}


def settings(compute_url: str, **overrides: Any) -> Settings:
    """lbhc's settings for this world; production defaults unless overridden."""
    return load_settings(
        project=PROJECT,
        region=REGION,
        node_tags=NODE_TAG,
        gce_endpoint=compute_url,
        base_name=BASE_NAME,
        **overrides,
    )


@dataclass(frozen=True)
class WorldSpec:
    nodes: int
    services: int  # LoadBalancer Services, each with its pool and forwarding rule
    local_share: float = 0.2  # of them, externalTrafficPolicy: Local
    pool_instances: int | None = None  # instances per pool; None: every node
    operation_latency: float = 0.0  # seconds each GCE operation takes
    mutation_quota: float | None = None  # the API's own limit: 403 rateLimitExceeded beyond
    converged: bool = False  # the shared pair exists and every Cluster pool carries it
    kube_proxy_pods: bool = True
    # Every n-th Service uses an ingress-gce backend service instead of a target pool (3: a
    # third of them; 0: none).
    rbs_every: int = 0


def call_kind(method: str, path: str) -> str:
    """`POST targetPools addHealthCheck`, `GET httpHealthChecks`, ... for a journal entry."""
    parts = path.split("?", 1)[0].rstrip("/").split("/")
    collection = next((p for p in reversed(parts) if p in COLLECTIONS), "?")
    verb = (
        parts[-1]
        if parts[-1] in {"addHealthCheck", "removeHealthCheck", "wait", "getHealth"}
        else ""
    )
    return f"{method} {collection}{' ' + verb if verb else ''}"


# ---- the parent's side ------------------------------------------------------------------


class FakeWorld:
    """`with FakeWorld(spec) as world:` serves both fakes until the block ends."""

    def __init__(self, spec: WorldSpec, start_timeout: float = 600.0) -> None:
        self.spec = spec
        self._start_timeout = start_timeout
        self._conn: Connection | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self.info: dict[str, Any] = {}

    def __enter__(self) -> Self:
        authkey = secrets.token_bytes(16)
        with socket.create_server(("127.0.0.1", 0)) as server:
            host, port = server.getsockname()[:2]
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tests.bench.world", f"{host}:{port}", authkey.hex()],
                cwd=ROOT,
                env=child_env(),
                stdin=subprocess.DEVNULL,
            )
            server.settimeout(self._start_timeout)
            try:
                sock, _ = server.accept()
            except OSError as exc:
                self.close()
                raise RuntimeError(f"the fakes did not connect back: {exc}") from exc
        sock.settimeout(None)
        conn = Connection(sock.detach())
        deliver_challenge(conn, authkey)  # what Listener.accept does
        answer_challenge(conn, authkey)
        self._conn = conn
        conn.send(self.spec)
        if not conn.poll(self._start_timeout):
            self.close()
            raise TimeoutError(f"the fakes did not start in {self._start_timeout:.0f} s")
        status, payload = conn.recv()
        if status != "ok":
            self.close()
            raise RuntimeError(f"the fakes failed to start:\n{payload}")
        self.info = payload
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(OSError, EOFError):
                self._conn.send(("stop", ()))
                self._conn.poll(10)
            self._conn.close()
            self._conn = None
        if self._process is not None:
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.terminate()
                self._process.wait(timeout=5)
            self._process = None

    @property
    def pid(self) -> int:
        assert self._process is not None
        return int(self._process.pid)

    def call(self, command: str, *args: Any) -> Any:
        assert self._conn is not None, "use FakeWorld as a context manager"
        self._conn.send((command, args))
        status, payload = self._conn.recv()
        if status != "ok":
            raise RuntimeError(f"fakes: {command} failed:\n{payload}")
        return payload

    # -- what the benchmarks ask ------------------------------------------------------------
    @property
    def kube_url(self) -> str:
        return str(self.info["kube_url"])

    @property
    def compute_url(self) -> str:
        return str(self.info["compute_url"])

    @property
    def cluster_pools(self) -> list[str]:
        return list(self.info["cluster_pools"])

    def calls(self, client_id: str) -> dict[str, Any]:
        """GCE requests by that client since the journal was last cleared."""
        result: dict[str, Any] = self.call("calls", client_id)
        return result

    def clear_journal(self) -> None:
        self.call("clear_journal")

    def attached(self, pools: list[str] | None = None) -> int:
        return int(self.call("attached", pools))

    def wait_attached(self, pools: list[str] | None, timeout: float) -> float | None:
        """The monotonic time at which every pool carried the check (None: timed out)."""
        result = self.call("wait_attached", pools, timeout)
        return None if result is None else float(result)

    def burst(self, count: int, first_index: int) -> dict[str, Any]:
        """`count` new Cluster Services at once, each pool created just before its Service."""
        result: dict[str, Any] = self.call("burst", count, first_index)
        return result

    def write_kubeconfig(self, path: Path) -> Path:
        return Path(self.call("write_kubeconfig", str(path)))


# ---- the child's side -------------------------------------------------------------------


def _serve(conn: Connection) -> None:
    try:
        spec = conn.recv()
        world = _World(spec)
    except BaseException:
        conn.send(("error", traceback.format_exc()))
        return
    try:
        conn.send(("ok", world.info))
        while True:
            command, args = conn.recv()
            if command == "stop":
                conn.send(("ok", None))
                return
            try:
                conn.send(("ok", getattr(world, "do_" + command)(*args)))
            except Exception:
                conn.send(("error", traceback.format_exc()))
    except (EOFError, OSError):
        return  # the benchmark went away
    finally:
        world.close()


class _World:
    def __init__(self, spec: WorldSpec) -> None:
        from lbhc.model.cluster import Node, Service
        from lbhc.sandbox.cloud_provider import provision_load_balancers
        from lbhc.sandbox.compute_fake import ComputeFakeServer
        from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
        from lbhc.sandbox.upstream.ingress_gce.names import L4Namer
        from tests.bench import objects
        from tests.bench.backend_lbs import make_rbs, provision_backend_lbs

        started = time.monotonic()
        self.spec = spec
        self._stack = contextlib.ExitStack()
        self.kube = KubeFake()
        self.compute = compute_fake(PROJECT)  # operations take no time until it is built
        seed_cluster(self.kube, kube_system_uid=KUBE_SYSTEM_UID, namespaces=("lbhc-system",))
        nodes, services, pods = objects.cluster(spec.nodes, spec.services, spec.local_share)
        self._nodes = [Node.model_validate(n) for n in nodes]
        rbs = make_rbs(services, spec.rbs_every)
        self.backend_services = provision_backend_lbs(
            self.compute, PROJECT, REGION, rbs, self._nodes, L4Namer(KUBE_SYSTEM_UID, "bench")
        )
        chosen = {id(s) for s in rbs}
        services = [s for s in services if id(s) not in chosen]
        for obj in [*nodes, *services, *rbs, *(pods if spec.kube_proxy_pods else [])]:
            self.kube.upsert(obj)
        members = self._nodes if spec.pool_instances is None else self._nodes[: spec.pool_instances]
        self._members = members
        self._provision: Callable[..., list[str]] = provision_load_balancers
        self._service_type = Service
        self.cluster_pools: list[str] = []
        local: list[str] = []
        for svc in services:
            projection = Service.model_validate(svc)
            cluster = projection.spec.external_traffic_policy == "Cluster"
            (self.cluster_pools if cluster else local).extend(self._provision_one(projection))
        self.kube_server = self._stack.enter_context(KubeFakeServer(self.kube))
        self.compute_server = self._stack.enter_context(ComputeFakeServer(self.compute))
        if spec.converged:
            self._converge()
        self.compute.operation_latency = spec.operation_latency
        if spec.mutation_quota is not None:
            quota = spec.mutation_quota
            self.compute.faults.rate_limit(quota, burst=max(1, int(quota)), mutating_only=True)
        self.compute.clear_journal()
        self.info = {
            "kube_url": self.kube_server.url,
            "compute_url": self.compute_server.url,
            "cluster_pools": self.cluster_pools,
            "local_pools": local,
            "backend_services": len(self.backend_services),
            "pool_instances": len(members),
            "build_seconds": round(time.monotonic() - started, 1),
        }

    def _provision_one(self, service: Any) -> list[str]:
        names: list[str] = self._provision(self.compute, PROJECT, REGION, [service], self._members)
        return names

    def _converge(self) -> None:
        """The shared pair as lbhc would create it (inserted through the fake's own request
        handling, no client needed), and the check on every Cluster pool."""
        import json

        from lbhc.model.cloud import firewall_to_json, health_check_to_json
        from lbhc.planner.shared import desired_firewall, desired_health_check
        from lbhc.sandbox.compute_fake import operations, urls

        config = settings(self.compute_server.url).planner_config()
        cluster_id = cluster_id_from_uid(KUBE_SYSTEM_UID)
        base = f"/compute/v1/projects/{PROJECT}/global"
        for collection, body in (
            ("firewalls", firewall_to_json(desired_firewall(CHECK_NAME, cluster_id, config))),
            (
                "httpHealthChecks",
                health_check_to_json(desired_health_check(CHECK_NAME, cluster_id, config)),
            ),
        ):
            status, _, answer = self.compute.handle(
                "POST", f"{base}/{collection}", None, {}, json.dumps(body).encode()
            )
            if status != 200:
                raise RuntimeError(f"seeding {collection}: {status} {answer!r}")
        store = self.compute._store
        with store.lock:
            operations.advance(store)
            pools = store.bucket("targetPools", PROJECT, urls.scope_of(REGION))
            for name in self.cluster_pools:
                pools[name]["healthChecks"] = [CHECK_URL]

    def close(self) -> None:
        self._stack.close()

    # -- commands -------------------------------------------------------------------------
    def _pools(self) -> dict[str, dict[str, Any]]:
        from lbhc.sandbox.compute_fake import operations, urls

        store = self.compute._store
        operations.advance(store)  # under the caller's lock: complete what is due
        return store.bucket("targetPools", PROJECT, urls.scope_of(REGION))

    def do_attached(self, names: list[str] | None) -> int:
        with self.compute._store.lock:
            pools = self._pools()
            wanted = self.cluster_pools if names is None else names
            return sum(1 for n in wanted if CHECK_URL in (pools[n].get("healthChecks") or []))

    def do_wait_attached(self, names: list[str] | None, timeout: float) -> float | None:
        wanted = len(self.cluster_pools if names is None else names)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.do_attached(names) == wanted:
                return time.monotonic()
            time.sleep(0.02)
        return None

    def do_calls(self, client_id: str) -> dict[str, Any]:
        by_kind: Counter[str] = Counter()
        statuses: Counter[str] = Counter()
        reads = writes = rejected = health_reads = 0
        for entry in self.compute.journal:
            if entry.client_id != client_id:
                continue
            by_kind[call_kind(entry.method, entry.path)] += 1
            statuses[str(entry.status)] += 1
            if entry.path.split("?", 1)[0].endswith("/getHealth"):
                # The verifier's, on a thread and a budget of their own (30 a minute by
                # default): not a pass's reads, whenever they land.
                health_reads += 1
            elif entry.mutating:
                writes += 1
                rejected += entry.status >= 400
            else:
                reads += 1
        return {
            "reads": reads,
            "health_reads": health_reads,
            "writes": writes,
            "writes_rejected": rejected,
            "by_method": dict(sorted(by_kind.items())),
            "by_status": dict(sorted(statuses.items())),
        }

    def do_clear_journal(self) -> None:
        self.compute.clear_journal()

    def do_burst(self, count: int, first_index: int) -> dict[str, Any]:
        from tests.bench import objects

        built = [objects.service(first_index + i, "Cluster") for i in range(count)]
        started = time.monotonic()
        names: list[str] = []
        for obj in built:
            # The pool first: lbhc's pass must find it when the Service's event arrives.
            names.extend(self._provision_one(self._service_type.model_validate(obj)))
            self.kube.upsert(obj)
        self.cluster_pools.extend(names)
        return {"started": started, "added": time.monotonic(), "pools": names}

    def do_write_kubeconfig(self, path: str) -> str:
        return str(self.kube_server.write_kubeconfig(Path(path)))


def main(argv: list[str]) -> int:
    address, key = argv
    host, port = address.rsplit(":", 1)
    with Client((host, int(port)), authkey=bytes.fromhex(key)) as conn:
        _serve(conn)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
