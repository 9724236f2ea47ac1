"""The world of the Compute fault cases: the controller harness (both fakes over HTTP, the real
controller in a thread), other owners' resources seeded next to ours, and the fake's journal
read as "what lbhc did"."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from lbhc.controller.app import ControllerApp, RunOptions
from lbhc.gce.client import GceClient
from lbhc.model.cluster import Service
from lbhc.planner.names import target_pool_name
from lbhc.sandbox.compute_fake import ComputeFake, JournalEntry
from lbhc.settings import Settings
from tests.controller.harness import PROJECT, REGION, World, world
from tests.worlds import make_load_balancer

IDENTITY = "lbhc-under-test"
OTHER_REGION = "europe-west1"
API = f"/compute/v1/projects/{PROJECT}"

# Other owners' resources: lbhc must never mutate them, whatever fails around it.
FOREIGN_CHECK = "other-team-hc"
FOREIGN_FIREWALL = "other-team-fw"
FOREIGN_POOL = "a0therc1usterp001"  # another cluster's Service, carrying that team's check
ORPHAN_POOL = "a0rphanp001"  # no description: nobody's claim, no check
OTHER_CLUSTER = json.dumps(
    {"kubernetes.io/service-name": "other-ns/other-svc"}, separators=(",", ":")
)

# A short resync so drift made by hand is seen, and stability can be judged, within a second
# or two.
RESYNC_SEC = 0.3


@dataclass
class FaultWorld:
    w: World
    settings: Settings = field(init=False)
    app: ControllerApp | None = None
    cluster_pools: list[str] = field(default_factory=list)
    local_pools: list[str] = field(default_factory=list)

    @property
    def compute(self) -> ComputeFake:
        return self.w.compute

    # ---- the cluster ----------------------------------------------------------------
    def add_services(self, cluster: int, local: int = 0, prefix: str = "svc") -> list[str]:
        added = [self.w.add_service(f"{prefix}-{i}") for i in range(cluster)]
        self.cluster_pools += added
        self.local_pools += [
            self.w.add_service(f"{prefix}-local-{i}", policy="Local") for i in range(local)
        ]
        return added

    def flip(self, pool: str, policy: str) -> None:
        """Switch the Service behind `pool` to another externalTrafficPolicy."""
        svc = self.service_of(pool)
        name, namespace = svc["metadata"]["name"], svc["metadata"]["namespace"]
        self.w.kube.patch("Service", namespace, name, {"spec": {"externalTrafficPolicy": policy}})
        source, target = (self.cluster_pools, self.local_pools)
        if policy == "Cluster":
            source, target = target, source
        source.remove(pool)
        target.append(pool)

    def service_of(self, pool: str) -> dict[str, Any]:
        for obj in self.w.kube.objects("Service"):
            if target_pool_name(Service.model_validate(obj).metadata.uid) == pool:
                return obj
        raise KeyError(pool)

    def our_pools(self) -> set[str]:
        """Pools a Service of this cluster claims: the only ones lbhc may ever change."""
        return {
            target_pool_name(Service.model_validate(o).metadata.uid)
            for o in self.w.kube.objects("Service")
        }

    def pool_checks(self, pool: str) -> list[str]:
        return self.w.pool_checks(pool)

    def attached(self, pool: str) -> bool:
        return self.w.attached(pool)

    # ---- the cloud, by hand ---------------------------------------------------------
    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """A request by someone other than lbhc (no client id), which must succeed."""
        raw = json.dumps(body).encode() if body is not None else b""
        headers = {"Content-Type": "application/json"}
        status, _, answer = self.compute.handle(method, API + path, None, headers, raw)
        assert status == 200, (method, path, answer)
        result: dict[str, Any] = json.loads(answer)
        return result

    def delete_load_balancer(self, pool: str, region: str = REGION) -> None:
        """What the cloud provider does when its Service goes: rule first, then the pool."""
        for collection in ("forwardingRules", "targetPools"):
            self.call("DELETE", f"/regions/{region}/{collection}/{pool}")

    def reprovision(self, pool: str) -> None:
        """The cloud provider makes the pool again for the same Service (same name)."""
        svc = Service.model_validate(self.service_of(pool))
        make_load_balancer(self.w.kube, self.compute, svc)

    def pool_op(self, pool: str, verb: str, check_url: str, region: str = REGION) -> None:
        body = {"healthChecks": [{"healthCheck": check_url}]}
        self.call("POST", f"/regions/{region}/targetPools/{pool}/{verb}", body)

    # ---- the controller -------------------------------------------------------------
    def configure(self, settings: dict[str, Any] | None = None) -> Settings:
        """lbhc's settings for this world: the harness's, with `settings` on top."""
        self.settings = self.w.settings(settings)
        return self.settings

    def start(
        self,
        settings: dict[str, Any] | None = None,
        request_timeout: float | None = None,
        **options: Any,
    ) -> ControllerApp:
        """The real controller, as the harness starts it. `request_timeout` replaces the
        GCE client's per-request timeout (30 s, not a setting) with a real, shorter one."""
        self.configure(settings)
        run = RunOptions(
            leader_elect=False,
            identity=IDENTITY,
            kube_host=self.w.kube_server.url,
            http_address="127.0.0.1:0",
            resync_period=RESYNC_SEC,
            lease_namespace="lbhc-system",
            watch_timeout_sec=30,
        )
        app = ControllerApp(self.settings, replace(run, **options))
        if request_timeout is not None:
            config = replace(app.gce.config, request_timeout_sec=request_timeout)
            app.gce = GceClient(config, observer=app.metrics.observe_gce_call)
        thread = threading.Thread(target=app.run, name=f"controller-{IDENTITY}", daemon=True)
        thread.start()
        self.w.apps.append(app)
        self.w.threads.append(thread)
        self.app = app
        return app

    @property
    def passes(self) -> int:
        controller = self.app.controller if self.app else None
        return controller.passes if controller else 0

    def metric(self, name: str, **labels: str) -> float:
        assert self.app is not None
        return self.app.metrics.registry.get_sample_value(name, labels) or 0.0

    def failed_passes(self) -> int:
        return int(
            self.metric("lbhc_reconciles_total", result="partial")
            + self.metric("lbhc_reconciles_total", result="error")
        )

    def warnings(self) -> tuple[str, ...]:
        controller = self.app.controller if self.app else None
        plan = controller.last_plan if controller else None
        return plan.warnings if plan else ()

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in self.w.kube.objects("Event") if e.get("reason") == reason]

    # ---- what lbhc did ----------------------------------------------------------------
    def lbhc_requests(self) -> list[JournalEntry]:
        return [e for e in self.compute.journal if e.client_id == IDENTITY]

    def lbhc_mutations(self) -> list[JournalEntry]:
        return [e for e in self.lbhc_requests() if e.mutating]


def seed_foreign(fw: FaultWorld) -> None:
    """Another team's check and firewall, another cluster's pool carrying that check, and an
    unclaimed pool: present in every case, never to be touched."""
    fake = fw.compute
    fake.add_http_health_check(
        PROJECT, FOREIGN_CHECK, description="other team", port=8080, requestPath="/ready"
    )
    fw.call(
        "POST",
        "/global/firewalls",
        {
            "name": FOREIGN_FIREWALL,
            "description": "other team",
            "allowed": [{"IPProtocol": "tcp", "ports": ["8080"]}],
            "sourceRanges": ["35.191.0.0/16"],
            "targetTags": ["gke-node"],
        },
    )
    pool = fake.add_target_pool(
        PROJECT, REGION, FOREIGN_POOL, description=OTHER_CLUSTER, health_checks=[FOREIGN_CHECK]
    )
    fake.add_forwarding_rule(PROJECT, REGION, FOREIGN_POOL, pool["selfLink"], OTHER_CLUSTER)
    fake.add_target_pool(PROJECT, REGION, ORPHAN_POOL)


@contextmanager
def fault_world(operation_latency: float = 0.0) -> Iterator[FaultWorld]:
    with world(operation_latency) as w:
        fw = FaultWorld(w)
        seed_foreign(fw)
        fw.compute.clear_journal()  # the seeding is not what the case is about
        yield fw
