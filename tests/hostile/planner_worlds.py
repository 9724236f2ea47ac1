"""Random (cluster, cloud, settings) triples for fuzzing plan(): the cluster from raw API
JSON through the projections' own validation, the cloud as GCE could hold it (ours, drifted,
wide open, foreign, another cluster's, on another network), the config from settings the
Settings validation accepts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from lbhc.model.cloud import (
    CloudSnapshot,
    Firewall,
    FirewallAllowed,
    ForwardingRule,
    HttpHealthCheck,
    TargetPool,
    http_health_check_url,
    network_url,
)
from lbhc.model.cluster import ClusterSnapshot, DaemonSet, HealthProbe, Node, Pod, Service
from lbhc.planner.config import PlannerConfig
from lbhc.planner.names import cluster_id_from_uid, shared_resource_name, target_pool_name
from lbhc.settings import SettingsError, load_settings
from tests.builders import KUBE_SYSTEM_UID
from tests.hostile.strategies import (
    SOURCE_RANGES,
    images,
    mostly,
    planner_settings,
    raw_daemonset,
    raw_node,
    raw_pod,
    raw_service,
    sane_versions,
)

SANE_IMAGES = mostly(sane_versions.map(lambda tag: f"registry.k8s.io/kube-proxy:{tag}"), images)
NO_GAP: st.SearchStrategy[tuple[str, ...]] = st.just(())

SERVICE_KEY = "kubernetes.io/service-name"


@dataclass(frozen=True)
class PlannerWorld:
    cluster: ClusterSnapshot
    cloud: CloudSnapshot
    config: PlannerConfig
    cluster_id: str
    name: str

    @property
    def url(self) -> str:
        return http_health_check_url(self.config.project, self.name)


def _unique(objects: list[dict[str, Any]], key: Any) -> list[dict[str, Any]]:
    seen: dict[Any, dict[str, Any]] = {}
    for obj in objects:
        seen.setdefault(key(obj), obj)
    return list(seen.values())


@st.composite
def clusters(draw: st.DrawFn) -> ClusterSnapshot:
    nodes = _unique(
        draw(st.lists(raw_node(versions=sane_versions), min_size=1, max_size=4)),
        lambda n: n["metadata"]["name"],
    )
    if draw(st.integers(0, 4)) == 0:  # a node too old for /healthz: fallback's trigger
        nodes.append(draw(raw_node(name="old-node", versions=st.just("v1.6.13"))))
    services = _unique(
        draw(st.lists(raw_service(), max_size=6)),
        lambda s: (s["metadata"]["namespace"], s["metadata"]["name"]),
    )
    pods = draw(st.lists(raw_pod(image=SANE_IMAGES), max_size=4))
    daemonsets = draw(st.lists(raw_daemonset(), max_size=2))
    probes = {
        name: HealthProbe(
            "10.0.0.1",
            draw(st.sampled_from([None, 200, 404, 503])),
            draw(st.sampled_from([None, 200, 503])),
            refused=draw(st.booleans()),
            node_marked=draw(st.booleans()),
        )
        for name in draw(st.lists(st.sampled_from([n["metadata"]["name"] for n in nodes] or ["x"])))
    }
    return ClusterSnapshot(
        nodes=tuple(Node.model_validate(n) for n in nodes),
        services=tuple(Service.model_validate(s) for s in services),
        kube_proxy_pods=tuple(Pod.model_validate(p) for p in pods),
        kube_system_uid=KUBE_SYSTEM_UID,
        gaps=draw(mostly(NO_GAP, st.sampled_from([("nodes relist",), ("services watch",)]))),
        versions_complete=draw(mostly(st.just(True), st.booleans())),
        observed_at=draw(st.none() | st.just(1.8e9)),
        kube_proxy_daemonsets=tuple(DaemonSet.model_validate(d) for d in daemonsets),
        health_probes=probes,
    )


def _descriptions(cluster_id: str) -> st.SearchStrategy[str]:
    mark = {"managedBy": "lbhc", "clusterId": cluster_id, "purpose": "x"}
    ours = json.dumps(mark, sort_keys=True, separators=(",", ":"))
    return mostly(
        st.just(ours),
        st.sampled_from(
            [
                json.dumps(mark),  # ours, spelled differently
                json.dumps({**mark, "clusterId": "another"}),  # another cluster's
                json.dumps({"managedBy": "someone-else", "clusterId": cluster_id}),
                "made by hand",
                "",
                "[1, 2]",
                "{not json",
            ]
        ),
    )


@st.composite
def health_checks(draw: st.DrawFn, name: str, cluster_id: str) -> HttpHealthCheck | None:
    if draw(st.integers(0, 3)) == 0:
        return None
    return HttpHealthCheck(
        name=name,
        description=draw(_descriptions(cluster_id)),
        host=draw(st.sampled_from(["", "evil.example.com"])),
        request_path=draw(st.sampled_from(["/healthz", "/", "/livez"])),
        port=draw(st.sampled_from([10256, 80, 22])),
        check_interval_sec=draw(st.integers(1, 300)),
        timeout_sec=draw(st.integers(1, 300)),
        healthy_threshold=draw(st.integers(1, 10)),
        unhealthy_threshold=draw(st.integers(1, 10)),
    )


ALLOWED = st.lists(
    st.builds(
        FirewallAllowed,
        st.sampled_from(["tcp", "udp", "all", "icmp"]),
        st.lists(st.sampled_from(["10256", "0-65535", "22", "80", "10000-20000"]), max_size=3).map(
            tuple
        ),
    ),
    max_size=3,
).map(tuple)
STRINGS = st.lists(st.sampled_from(["gke-node", "other-tag", "sa@p.iam", "1.2.3.4/32"]), max_size=2)


@st.composite
def firewalls(
    draw: st.DrawFn, name: str, cluster_id: str, config: PlannerConfig
) -> Firewall | None:
    """Anything a hand (or an attacker with firewall rights) could have made of our rule."""
    if draw(st.integers(0, 3)) == 0:
        return None
    return Firewall(
        name=name,
        network=draw(
            mostly(
                st.just(network_url(config.project, config.network)),
                st.just(network_url("proj", "elsewhere")),
            )
        ),
        description=draw(_descriptions(cluster_id)),
        direction=draw(st.sampled_from(["INGRESS", "EGRESS"])),
        priority=draw(st.sampled_from([1000, 0, 65535])),
        allowed=draw(ALLOWED),
        source_ranges=tuple(draw(SOURCE_RANGES)),
        target_tags=tuple(draw(STRINGS)),
        destination_ranges=tuple(draw(STRINGS)),
        source_tags=tuple(draw(STRINGS)),
        source_service_accounts=tuple(draw(STRINGS)),
        target_service_accounts=tuple(draw(STRINGS)),
        disabled=draw(st.booleans()),
    )


@st.composite
def pools_and_rules(
    draw: st.DrawFn, cluster: ClusterSnapshot, url: str
) -> tuple[tuple[TargetPool, ...], tuple[ForwardingRule, ...]]:
    """Mostly the pool the cloud provider made for each LoadBalancer Service, claiming it;
    some claiming another Service or nothing, some missing, plus pools nobody here owns."""
    foreign = url.replace("/httpHealthChecks/", "/httpHealthChecks/x-")
    partial = url.removeprefix("https://www.googleapis.com/compute/v1/")
    check_lists = st.sampled_from([(), (), (url,), (foreign,), (url, foreign), (partial,)])
    keys = [s.key for s in cluster.services] or ["default/none"]
    odd_claims = st.sampled_from(keys).map(lambda key: json.dumps({SERVICE_KEY: key})) | (
        st.sampled_from(["", "{}", "free text", json.dumps({SERVICE_KEY: 5})])
    )
    wanted = [(target_pool_name(s.metadata.uid), s.key) for s in cluster.services]
    wanted += [("orphan-1", "default/gone"), ("orphan-2", "")]
    pools: dict[str, TargetPool] = {}
    rules: list[ForwardingRule] = []
    for pool_name, key in wanted:
        if pool_name in pools or not draw(mostly(st.just(True), st.booleans())):
            continue
        own = json.dumps({SERVICE_KEY: key}, separators=(",", ":"))
        in_pool, in_rule = draw(
            mostly(
                st.sampled_from([(own, own), ("", own), (own, None)]),
                st.tuples(odd_claims, st.none() | odd_claims),
            )
        )
        pools[pool_name] = TargetPool(
            name=pool_name, description=in_pool, health_checks=draw(check_lists)
        )
        if in_rule is not None:
            rules.append(ForwardingRule(pool_name, description=in_rule))
    return tuple(pools.values()), tuple(rules)


@st.composite
def planner_worlds(draw: st.DrawFn) -> PlannerWorld:
    try:
        config = load_settings(**draw(planner_settings())).planner_config()
    except SettingsError:
        assume(False)
        raise
    cluster = draw(clusters())
    # As plan() derives them; plan() itself must then never refuse these settings.
    cluster_id = config.cluster_id or cluster_id_from_uid(KUBE_SYSTEM_UID)
    name = shared_resource_name(config.base_name, cluster_id)
    url = http_health_check_url(config.project, name)
    pools, rules = draw(pools_and_rules(cluster, url))
    cloud = CloudSnapshot(
        health_check=draw(health_checks(name, cluster_id)),
        firewall=draw(firewalls(name, cluster_id, config)),
        target_pools=pools,
        forwarding_rules=rules,
        gaps=draw(mostly(NO_GAP, st.just(("target pools page 2",)))),
    )
    return PlannerWorld(cluster, cloud, config, cluster_id, name)
