"""`lbhc status --lb-health` over nodes whose providerID is missing, another cloud's, another
project's or malformed, and a node name at 253 characters: one row per node with an answer
(GCE's, or why there is none), exit 0, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lbhc.cli.parser import EXIT_OK
from lbhc.model.cluster import Node, Service
from lbhc.sandbox.cloud_provider import provision_load_balancers
from tests.builders import PROJECT, REGION
from tests.builders.kube import (
    KUBE_SYSTEM_UID,
    LONG_NODE_NAME,
    namespace,
    node,
    service,
    with_provider_id,
)
from tests.hostile.cli import run_cli
from tests.hostile.conftest import Fakes

IN_POOL = {
    "plain": node("plain"),
    "no-provider-id": node("no-provider-id", with_provider_id(None)),
    "on-aws": node("on-aws", with_provider_id("aws:///us-east-1a/i-0abc")),
    "other-project": node("other-project", with_provider_id("gce://elsewhere/z-1/vm-1")),
    "gce-nothing": node("gce-nothing", with_provider_id("gce://")),
    "gce-slashes": node("gce-slashes", with_provider_id("gce:///zone//")),
    LONG_NODE_NAME: node(LONG_NODE_NAME),
}
# Joined after the load balancer was made: GCE has never heard of its VM in the pool.
LATE = node("late", with_provider_id("gce://elsewhere/z-1/vm-late"))


def dump(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def test_status_answers_for_every_node_whatever_its_provider_id(
    clean_fakes: Fakes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    web = service("web")
    web["metadata"]["uid"] = "5a1e0000-0000-4000-8000-00000000beef"
    nodes = [Node.model_validate(n) for n in IN_POOL.values()]
    provision_load_balancers(
        clean_fakes.compute, PROJECT, REGION, [Service.model_validate(web)], nodes
    )
    path = dump(
        tmp_path / "dump.json",
        [namespace("kube-system", KUBE_SYSTEM_UID), *IN_POOL.values(), LATE, web],
    )
    flags = [
        f"--cluster-snapshot={path}",
        f"--project={PROJECT}",
        f"--region={REGION}",
        "--node-tags=gke-node",
        f"--gce-endpoint={clean_fakes.compute_url}",
    ]
    assert run_cli(capsys, ["apply", *flags]).code == EXIT_OK

    result = run_cli(capsys, ["status", "--lb-health", "--output=json", *flags])

    assert result.code == EXIT_OK, result.err
    assert "Traceback" not in result.err
    health = {n["node"]: n["lbHealth"] for n in json.loads(result.out)["nodes"]}
    assert health == {name: "HEALTHY" for name in IN_POOL} | {"late": "not in the pool"}
