"""The two shared resources: what they should be, whether they are ours, and the diff."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from lbhc.model.cloud import (
    Firewall,
    FirewallAllowed,
    HttpHealthCheck,
    allowed_to_json,
    network_url,
    parse_description,
    resource_name,
    resource_path,
)
from lbhc.model.plan import FieldChange
from lbhc.planner.config import PlannerConfig
from lbhc.planner.ledger import LEDGER_KEY, TakeoverLedger

MANAGED_BY = "lbhc"
PURPOSE = "kube-proxy /healthz for externalTrafficPolicy=Cluster target pools"


def ownership_description(cluster_id: str, ledger: TakeoverLedger | None = None) -> str:
    """Deterministic JSON so a string compare tells drift; the cluster id is the owner mark.
    The check's description also carries the takeover ledger (see ledger.py)."""
    body: dict[str, object] = {"managedBy": MANAGED_BY, "clusterId": cluster_id, "purpose": PURPOSE}
    if ledger:
        body[LEDGER_KEY] = ledger.to_json()
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def is_owned(description: str, cluster_id: str) -> bool:
    fields = parse_description(description)
    return fields.get("managedBy") == MANAGED_BY and fields.get("clusterId") == cluster_id


def owner_of(description: str) -> str | None:
    """The cluster id of an lbhc resource, None for anything lbhc did not make."""
    fields = parse_description(description)
    owner = fields.get("clusterId")
    return owner if fields.get("managedBy") == MANAGED_BY and isinstance(owner, str) else None


def read_ledger(check: HttpHealthCheck | None) -> TakeoverLedger:
    if check is None:
        return TakeoverLedger()
    return TakeoverLedger.from_json(parse_description(check.description).get(LEDGER_KEY))


def desired_health_check(
    name: str, cluster_id: str, config: PlannerConfig, ledger: TakeoverLedger | None = None
) -> HttpHealthCheck:
    return HttpHealthCheck(
        name=name,
        description=ownership_description(cluster_id, ledger),
        host="",
        request_path=config.request_path,
        port=config.port,
        check_interval_sec=config.check_interval_sec,
        timeout_sec=config.timeout_sec,
        healthy_threshold=config.healthy_threshold,
        unhealthy_threshold=config.unhealthy_threshold,
    )


def desired_firewall(
    name: str, cluster_id: str, config: PlannerConfig, priority: int = 1000
) -> Firewall:
    """`priority`: 1000, or the cloud provider's allow priority (999) where its per-LB deny
    rules at 1000 would otherwise win the tie (planner/pool_reach.our_firewall_priority)."""
    return Firewall(
        name=name,
        network=network_url(config.firewall_project, config.network),
        description=ownership_description(cluster_id),
        direction="INGRESS",
        priority=priority,
        allowed=(FirewallAllowed("tcp", (str(config.port),)),),
        source_ranges=tuple(sorted(config.source_ranges)),
        target_tags=tuple(sorted(config.node_tags)),
        destination_ranges=(),
    )


_ALWAYS_CORRECTED = (
    ("port", "port"),
    ("request_path", "requestPath"),
    ("host", "host"),
    ("description", "description"),
)
_TIMINGS = (
    ("check_interval_sec", "checkIntervalSec"),
    ("timeout_sec", "timeoutSec"),
    ("healthy_threshold", "healthyThreshold"),
    ("unhealthy_threshold", "unhealthyThreshold"),
)


T = TypeVar("T")


@dataclass(frozen=True)
class Reconciled(Generic[T]):
    """The resource to write (actual merged with desired) and the fields that changed."""

    resource: T
    diff: dict[str, FieldChange]


def reconcile_health_check(
    actual: HttpHealthCheck, desired: HttpHealthCheck, raise_only_timings: bool
) -> Reconciled[HttpHealthCheck]:
    """Port, path, host and description are always ours to set. Timings follow the config,
    or in raise-only mode keep any value a user raised by hand (upstream's merge, from
    kubernetes#70099: a check made too frequent overloaded nodes)."""
    values: dict[str, Any] = {}
    diff: dict[str, FieldChange] = {}
    for attr, api_name in _ALWAYS_CORRECTED + _TIMINGS:
        want = getattr(desired, attr)
        have = getattr(actual, attr)
        if raise_only_timings and (attr, api_name) in _TIMINGS:
            want = max(want, have)
        values[attr] = want
        if want != have:
            diff[api_name] = FieldChange(have, want)
    # The desired check with the merged values, under the actual check's name and link.
    merged = dataclasses.replace(desired, name=actual.name, self_link=actual.self_link, **values)
    return Reconciled(merged, diff)


def reconcile_firewall(actual: Firewall, desired: Firewall) -> Reconciled[Firewall]:
    """Everything but the network is corrected: destinationRanges are cleared so the rule is
    never pinned to one Service's IP as upstream's can be, and fields that would widen who
    may connect (source tags, service accounts) are cleared too."""
    diff: dict[str, FieldChange] = {}
    pairs: list[tuple[str, object, object]] = [
        ("description", actual.description, desired.description),
        ("direction", actual.direction, desired.direction),
        ("priority", actual.priority, desired.priority),
        ("allowed", allowed_to_json(actual.allowed), allowed_to_json(desired.allowed)),
        ("sourceRanges", sorted(actual.source_ranges), sorted(desired.source_ranges)),
        ("targetTags", sorted(actual.target_tags), sorted(desired.target_tags)),
        ("destinationRanges", sorted(actual.destination_ranges), []),
        ("sourceTags", sorted(actual.source_tags), []),
        ("sourceServiceAccounts", sorted(actual.source_service_accounts), []),
        ("targetServiceAccounts", sorted(actual.target_service_accounts), []),
        ("disabled", actual.disabled, False),
    ]
    for api_name, have, want in pairs:
        if have != want:
            diff[api_name] = FieldChange(have, want)
    merged = Firewall(
        name=actual.name,
        network=actual.network,
        description=desired.description,
        direction=desired.direction,
        priority=desired.priority,
        allowed=desired.allowed,
        source_ranges=desired.source_ranges,
        target_tags=desired.target_tags,
        destination_ranges=(),
        disabled=False,
        self_link=actual.self_link,
    )
    return Reconciled(merged, diff)


def same_network(actual: Firewall, desired: Firewall) -> bool:
    return resource_path(actual.network) == resource_path(desired.network)


def firewall_command(firewall: Firewall, project: str) -> str:
    """The gcloud command a network admin runs to make the rule lbhc may not write (a Shared
    VPC host project), as the cloud provider's FirewallChangeNeeded Event gives one: the
    description carries lbhc's ownership mark, so lbhc recognises the rule as its own."""
    allowed = ",".join(
        f"{a.ip_protocol}:{port}" for a in firewall.allowed for port in (a.ports or ("",))
    ).rstrip(":")
    return (
        f"gcloud compute firewall-rules create {firewall.name} --project={project} "
        f"--network={resource_name(firewall.network)} --direction={firewall.direction} "
        f"--priority={firewall.priority} --action=ALLOW --rules={allowed} "
        f"--source-ranges={','.join(firewall.source_ranges)} "
        f"--target-tags={','.join(firewall.target_tags)} "
        f"--description='{firewall.description}'"
    )
