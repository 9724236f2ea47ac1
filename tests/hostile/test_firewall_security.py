"""The security invariant end to end: whatever lbhc's own firewall rule was widened to by
hand (any source, every port, udp, source tags, pinned destinations, no target tags,
disabled), `lbhc apply` leaves in GCE exactly tcp:<port> from Google's health-checker
ranges to the node tags, and nothing else. The planner fuzz checks the same on every plan;
this checks what the executor and the Compute API's update really leave behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lbhc.cli.parser import EXIT_OK
from lbhc.model.cluster import Service
from lbhc.planner.config import HEALTH_CHECKER_RANGES
from lbhc.planner.names import cluster_id_from_uid, shared_resource_name
from lbhc.planner.shared import ownership_description
from tests.builders import PROJECT, REGION
from tests.builders.kube import KUBE_SYSTEM_UID, namespace, node, service
from tests.conftest import ComputeEnv
from tests.hostile.cli import run_cli

CLUSTER_ID = cluster_id_from_uid(KUBE_SYSTEM_UID)
NAME = shared_resource_name("k8s-l4-healthcheck", CLUSTER_ID)
WIDE_OPEN = {
    "name": NAME,
    "network": f"projects/{PROJECT}/global/networks/default",
    "description": ownership_description(CLUSTER_ID),  # ours: lbhc may and must repair it
    "direction": "INGRESS",
    "priority": 0,
    "allowed": [{"IPProtocol": "tcp", "ports": ["0-65535"]}, {"IPProtocol": "udp"}],
    "sourceRanges": ["0.0.0.0/0", *HEALTH_CHECKER_RANGES],
    "sourceTags": ["any-vm"],
    "destinationRanges": ["203.0.113.10/32"],
    "disabled": True,
}


@pytest.mark.parametrize("port", [10256, 18080])
def test_apply_narrows_a_widened_rule_to_the_health_check_port_and_ranges(
    port: int,
    compute: ComputeEnv,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, body = compute.fake.handle(
        "POST", f"/compute/v1/projects/{PROJECT}/global/firewalls", body=json.dumps(WIDE_OPEN)
    )
    assert status == 200, body
    web = service("web")
    web["metadata"]["uid"] = "7e57f1e0-0000-4000-8000-000000000001"
    pool = compute.add_service_pool(Service.model_validate(web))
    dump = tmp_path / "dump.json"
    items = [namespace("kube-system", KUBE_SYSTEM_UID), node("n-1"), web]
    dump.write_text(json.dumps({"kind": "List", "items": items}))
    monkeypatch.setenv("LBHC_HEALTH_CHECK_PORT", str(port))

    result = run_cli(
        capsys,
        [
            "apply",
            f"--cluster-snapshot={dump}",
            f"--project={PROJECT}",
            f"--region={REGION}",
            "--node-tags=gke-node,gke-pool-b",
            f"--gce-endpoint={compute.url}",
        ],
    )

    assert result.code == EXIT_OK, result
    assert f"update Firewall {NAME}" in result.out  # repaired, not merely left alone
    assert compute.pool_checks(pool)  # the check went on, through the narrowed rule
    rule = compute.fake.firewalls(PROJECT)[NAME]

    assert rule["allowed"] == [{"IPProtocol": "tcp", "ports": [str(port)]}]
    assert sorted(rule["sourceRanges"]) == sorted(HEALTH_CHECKER_RANGES)
    assert sorted(rule["targetTags"]) == ["gke-node", "gke-pool-b"]
    assert rule["direction"] == "INGRESS" and rule.get("disabled") is False
    for widening in ("sourceTags", "destinationRanges", "sourceServiceAccounts", "denied"):
        assert not rule.get(widening), (widening, rule[widening])
