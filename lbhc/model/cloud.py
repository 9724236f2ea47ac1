"""The GCE resources lbhc reads, as plain frozen data (no client types leak past gce/)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from lbhc.model.backend import BackendView
from lbhc.model.cluster import Node

# Firewall rules live with the effective firewall; re-exported here, where callers long found them.
from lbhc.model.firewall import EffectiveFirewall as EffectiveFirewall
from lbhc.model.firewall import Firewall as Firewall
from lbhc.model.firewall import FirewallAllowed as FirewallAllowed
from lbhc.model.lb_health import LbHealthView

# Canonical prefix the Compute API uses in every selfLink, whatever endpoint served it.
COMPUTE_URL_PREFIX = "https://www.googleapis.com/compute/v1/"


def resource_path(url: str) -> str:
    """`projects/p/...` part of a Compute URL, so links from any endpoint compare equal."""
    index = url.find("projects/")
    return url[index:] if index >= 0 else url


def resource_name(url: str) -> str:
    """A resource's name: the last segment of its URL or path."""
    return url.rsplit("/", 1)[-1]


def http_health_check_url(project: str, name: str) -> str:
    return f"{COMPUTE_URL_PREFIX}projects/{project}/global/httpHealthChecks/{name}"


def network_url(project: str, network: str) -> str:
    if "/" in network:
        return COMPUTE_URL_PREFIX + resource_path(network)
    return f"{COMPUTE_URL_PREFIX}projects/{project}/global/networks/{network}"


def parse_description(description: str) -> dict[str, object]:
    """Decode a JSON description; anything else (free text, empty) gives {}."""
    try:
        value = json.loads(description) if description else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class HttpHealthCheck:
    name: str
    description: str = ""
    host: str = ""
    request_path: str = "/"
    port: int = 80
    check_interval_sec: int = 5
    timeout_sec: int = 5
    healthy_threshold: int = 2
    unhealthy_threshold: int = 2
    self_link: str = ""


@dataclass(frozen=True)
class TargetPool:
    name: str
    region: str = ""
    description: str = ""
    health_checks: tuple[str, ...] = ()
    self_link: str = ""


@dataclass(frozen=True)
class ForwardingRule:
    name: str
    description: str = ""
    target: str = ""  # a target pool's URL ("" for a backend-service load balancer)
    ip_address: str = ""
    backend_service: str = ""  # a backend service's URL ("" for a target-pool one)
    scheme: str = ""  # loadBalancingScheme: EXTERNAL, INTERNAL


@dataclass(frozen=True)
class CloudSnapshot:
    """The shared resources (None when absent), the region's pools and forwarding rules, and
    the project's legacy health checks (what each pool really carries).

    `gaps` names anything that could not be read in full; like the cluster's, a gap makes
    the planner withhold detaches and deletes. `health_checks` is keyed by resource path
    (`projects/P/global/httpHealthChecks/NAME`); `health_checks_complete` is False when they
    could not be listed, so a check missing from it is unknown rather than gone.
    """

    health_check: HttpHealthCheck | None = None
    firewall: Firewall | None = None
    target_pools: tuple[TargetPool, ...] = ()
    forwarding_rules: tuple[ForwardingRule, ...] = ()
    gaps: tuple[str, ...] = field(default=())
    health_checks: Mapping[str, HttpHealthCheck] = field(default_factory=dict)
    health_checks_complete: bool = True
    # False when the region's pools could not be listed: which pools hold a node is unknown.
    pools_complete: bool = True
    # Why lbhc's firewall could not be read (a 403 from a Shared VPC host project), "" if it
    # could: then whether it exists is unknown, and nothing relying on it may be attached.
    firewall_unreadable: str = ""
    # The nodes' network's effective firewall (None: not read); why it could not be read.
    effective_firewall: EffectiveFirewall | None = None
    effective_firewall_unreadable: str = ""
    # Check port -> how it is known the nodes answer it (GCE's getHealth calling instances
    # HEALTHY in a pool whose probes are admitted): filled by the caller on request.
    port_evidence: Mapping[int, str] = field(default_factory=dict)
    # GCE's getHealth readings, read within the read budget by the controller (not by the
    # snapshot read): the evidence drain verdicts and pool health are verified against.
    lb_health: LbHealthView = field(default_factory=LbHealthView)
    # Backend-service load balancers' resources, read (never written) for coverage and drain.
    backends: BackendView = field(default_factory=BackendView)

    @property
    def complete(self) -> bool:
        return not self.gaps

    def check_at(self, url: str) -> HttpHealthCheck | None:
        """The legacy check a pool's `healthChecks` entry names, as read (None if unknown)."""
        path = resource_path(url)
        ours = self.health_check
        if ours is not None:
            link = resource_path(ours.self_link) if ours.self_link else ""
            if link == path or (not link and resource_name(path) == ours.name):
                return ours
        return self.health_checks.get(path)

    def check_gone(self, url: str) -> bool:
        """Provably deleted: the full listing does not have it."""
        return self.health_checks_complete and self.check_at(url) is None


def allowed_to_json(allowed: tuple[FirewallAllowed, ...]) -> list[dict[str, object]]:
    return [{"IPProtocol": a.ip_protocol, "ports": list(a.ports)} for a in allowed]


def health_check_to_json(check: HttpHealthCheck) -> dict[str, object]:
    """The REST body for insert/update, in the API's field names."""
    body: dict[str, object] = {
        "name": check.name,
        "description": check.description,
        "requestPath": check.request_path,
        "port": check.port,
        "checkIntervalSec": check.check_interval_sec,
        "timeoutSec": check.timeout_sec,
        "healthyThreshold": check.healthy_threshold,
        "unhealthyThreshold": check.unhealthy_threshold,
    }
    if check.host:
        body["host"] = check.host
    return body


def firewall_to_json(firewall: Firewall) -> dict[str, object]:
    return {
        "name": firewall.name,
        "network": firewall.network,
        "description": firewall.description,
        "direction": firewall.direction,
        "priority": firewall.priority,
        "allowed": allowed_to_json(firewall.allowed),
        "sourceRanges": list(firewall.source_ranges),
        "targetTags": list(firewall.target_tags),
        "disabled": firewall.disabled,
    }


def instance_url(node: Node, project: str, default_zone: str) -> str:
    """The node's VM from providerID gce://PROJECT/ZONE/NAME, as the cloud provider derives
    it; a node without one is taken to be a VM of its own name in `default_zone`."""
    parts = node.spec.provider_id.removeprefix("gce://").split("/")
    if len(parts) == 3:
        project, zone, name = parts
    else:
        zone, name = default_zone, node.name
    return f"{COMPUTE_URL_PREFIX}projects/{project}/zones/{zone}/instances/{name}"


class InstanceUrls(Mapping[str, str]):
    """Node name -> its VM's URL, as instance_urls, made only for the nodes looked up: the
    controller's reader asks for a few a minute of thousands of nodes, every pass."""

    def __init__(self, nodes: Iterable[Node], project: str, region: str) -> None:
        self._nodes = {node.name: node for node in nodes}
        self._project, self._zone = project, f"{region}-a"

    def __getitem__(self, name: str) -> str:
        return instance_url(self._nodes[name], self._project, self._zone)

    def __contains__(self, name: object) -> bool:
        return name in self._nodes

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)


def instance_urls(nodes: Iterable[Node], project: str, region: str) -> dict[str, str]:
    """Node name -> its VM's URL, for targetPools.getHealth. Nodes on GCE always carry a
    providerID; one without is taken to be in the region's zone "a"."""
    return {node.name: instance_url(node, project, f"{region}-a") for node in nodes}
