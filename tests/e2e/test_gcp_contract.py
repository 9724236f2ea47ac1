"""The gcp environment's own code, offline, so it does not rot between real runs: the
outputs contract with terraform/, the skip reasons, the cluster the outputs describe, and
GcpWorld's whole life (preflight, lbhc as a CLI, marking nodes, fallback, clean-up and its
last resort) against a Compute fake seeded as terraform/ seeds the project, with the VM
metadata switch stubbed; the switch itself runs against the fake's instances, and
impersonation against a local stand-in for the IAM credentials endpoint. What only the
real project can show (Google's health checkers, IAM policy, real operations) is left to
the scenario's gcp runs."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lbhc.gce.client import GceClient
from lbhc.gce.config import GceClientConfig
from lbhc.model.cloud import COMPUTE_URL_PREFIX
from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from tests.e2e.gcp import (
    NODE_STATE_DELETING,
    OUTPUTS_ENV,
    Outputs,
    OutputsError,
    VmNode,
    locate_outputs,
)
from tests.e2e.world import TAINT, GcpProject, GcpWorld

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = Path(__file__).with_name("sample_outputs.json")


def sample() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return document


class StubSwitch:
    """The VMs' node-state attribute, in memory."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.calls: list[tuple[str, str | None]] = []

    def get(self, vm: VmNode) -> str | None:
        return self.values.get(vm.name)

    def set(self, vm: VmNode, value: str | None) -> None:
        self.calls.append((vm.name, value))
        if value is None:
            self.values.pop(vm.name, None)
        else:
            self.values[vm.name] = value


def seed_like_terraform(fake: ComputeFake, outputs: Outputs) -> None:
    """load_balancers.tf: a pool per Service with every VM and no check, and its rule."""
    fake.add_network(outputs.project_id, outputs.network)
    instances = [
        f"{COMPUTE_URL_PREFIX}projects/{outputs.project_id}/zones/{vm.zone}/instances/{vm.name}"
        for vm in outputs.nodes
    ]
    for index, service in enumerate((outputs.cluster_service, outputs.local_service)):
        description = json.dumps(
            {"kubernetes.io/service-name": f"{service.namespace}/{service.name}"},
            separators=(",", ":"),
        )
        pool = fake.add_target_pool(
            outputs.project_id,
            outputs.region,
            service.target_pool,
            description=description,
            instances=instances,
        )
        fake.add_forwarding_rule(
            outputs.project_id,
            outputs.region,
            service.forwarding_rule,
            target=pool["selfLink"],
            description=description,
            ip_address=f"203.0.113.{20 + index}",
        )


@pytest.fixture
def offline(tmp_path: Path) -> Iterator[tuple[GcpWorld, StubSwitch, ComputeFake]]:
    outputs = Outputs.from_json(sample())
    fake = ComputeFake(operation_latency=0.0)
    seed_like_terraform(fake, outputs)
    switch = StubSwitch()
    switch.values[outputs.nodes[0].name] = NODE_STATE_DELETING  # a killed run's leftover
    with ComputeFakeServer(fake) as server:
        config = GceClientConfig(
            project=outputs.project_id,
            region=outputs.region,
            endpoint=server.url,
            read_only=True,
            client_id="lbhc-e2e-observer",
        )
        project = GcpProject(outputs, None, switch, GceClient(config), endpoint=server.url)
        world = GcpWorld(project, tmp_path)
        try:
            yield world, switch, fake
        finally:
            world.close()


def test_the_sample_is_what_terraform_outputs_declares() -> None:
    outputs_tf = ROOT / "terraform" / "outputs.tf"
    if not outputs_tf.is_file():
        pytest.skip("terraform/outputs.tf is not there to compare with")
    declared = set(re.findall(r'^output\s+"([a-z_]+)"', outputs_tf.read_text(), re.MULTILINE))
    assert declared == set(sample())
    outputs = Outputs.from_json(sample())
    assert len(outputs.nodes) == 3 and outputs.node_state_metadata_key == "lbhc-e2e-node-state"


@pytest.mark.parametrize(
    ("break_it", "message"),
    [
        (lambda d: d.pop("node_tag"), "output 'node_tag' is missing"),
        (lambda d: d["nodes"].update(value=[]), "nodes: expected a non-empty list"),
        (lambda d: d["nodes"]["value"][1].pop("zone"), "nodes[1].zone: expected a non-empty"),
        (lambda d: d["local_service"]["value"].update(uid=7), "local_service.uid: expected"),
        (lambda d: d.update(region={"value": ""}), "region: expected a non-empty string"),
    ],
)
def test_a_broken_contract_names_what_is_wrong(break_it: Any, message: str) -> None:
    document = sample()
    break_it(document)
    with pytest.raises(OutputsError, match=re.escape(message)):
        Outputs.from_json(document, "outputs.json")


def test_the_skip_reasons_are_one_line_and_say_what_is_missing(tmp_path: Path) -> None:
    unset = locate_outputs({})
    assert isinstance(unset, str) and unset.startswith(f"gcp: {OUTPUTS_ENV} is not set")
    missing = locate_outputs({OUTPUTS_ENV: str(tmp_path / "nope.json")})
    assert isinstance(missing, str) and "is not readable" in missing
    (tmp_path / "bad.json").write_text("{not json")
    bad = locate_outputs({OUTPUTS_ENV: str(tmp_path / "bad.json")})
    assert isinstance(bad, str) and "is not JSON (line 1" in bad
    for reason in (unset, missing, bad):
        assert "\n" not in reason
    (tmp_path / "good.json").write_text(SAMPLE.read_text())
    found = locate_outputs({OUTPUTS_ENV: str(tmp_path / "good.json")})
    assert not isinstance(found, str) and found[0] == sample()


def test_gcp_world_runs_lbhc_over_the_outputs_and_cleans_up_after_a_messy_test(
    offline: tuple[GcpWorld, StubSwitch, ComputeFake],
) -> None:
    world, switch, fake = offline
    outputs = world.outputs
    assert switch.values == {}, "preflight clears a node left marked by a killed run"
    assert re.fullmatch(r"e2e-[0-9a-f]{8}", world.cluster_id or "")
    assert world.check_name == f"k8s-l4-healthcheck-{world.cluster_id}"

    snapshot = json.loads(world.write_snapshot().read_text())
    nodes = [i for i in snapshot["items"] if i["kind"] == "Node"]
    assert [n["spec"]["providerID"] for n in nodes] == [
        f"gce://{outputs.project_id}/{vm.zone}/{vm.name}" for vm in outputs.nodes
    ]
    result = world.apply()
    assert {(r["action"], r["name"]) for r in result["results"]} == {
        ("create", world.check_name),
        ("attach", world.cluster_pool),
    }
    assert result["fallback"] is None and result["withheld"] == []
    assert world.pools_carrying_check() == {world.cluster_pool}
    firewall = fake.firewalls(outputs.project_id)[world.check_name]
    assert firewall["network"].endswith(f"/global/networks/{outputs.network}")
    assert firewall["targetTags"] == [outputs.node_tag]

    victim = outputs.nodes[1].name
    world.mark_being_deleted(victim)
    assert switch.values == {victim: NODE_STATE_DELETING}
    node = world.kube.get("Node", None, victim) or {}
    assert [t["key"] for t in node["spec"]["taints"]] == [TAINT]
    status = world.lbhc("status", "--output", "json")
    states = {n["node"]: n["drain"]["state"] for n in status.json()["nodes"]}
    assert states[victim] == "partially-draining", states  # the Local pool follows endpoints
    world.restore(victim)
    assert switch.values == {}

    old = world.add_old_node()
    fallback = world.apply(view="complete")
    assert [n["name"] for n in fallback["fallback"]["nodes"]] == [old]
    assert world.pools_carrying_check() == set()

    # Left messy on purpose: the old node still there, check and firewall still there, a
    # node marked. The clean-up every test gets must put all of it right through lbhc.
    world.mark_being_deleted(outputs.nodes[2].name)
    assert world.clean_up() == []
    assert switch.values == {}
    assert world.leftovers() == []
    assert world.load_balancers_changed() == {}
    janitor = [e for e in fake.mutating_requests() if e.client_id == "lbhc-e2e-janitor"]
    assert janitor == [], "lbhc removed everything itself"


def test_clean_up_removes_what_lbhc_leaves_behind_and_reports_it(
    offline: tuple[GcpWorld, StubSwitch, ComputeFake],
) -> None:
    world, _, fake = offline
    world.apply()
    # Services gone from the view altogether (not marked deleted): no Service claims the
    # pool any more, so lbhc may not touch it, and its garbage collection waits for ever.
    for obj in world.kube.objects("Service"):
        meta = obj["metadata"]
        world.kube.patch(
            "Service", meta["namespace"], meta["name"], {"metadata": {"finalizers": None}}
        )
        world.kube.delete("Service", meta["namespace"], meta["name"])

    problems = world.clean_up()

    assert len(problems) == 1 and problems[0].startswith("lbhc left ['target pool"), problems
    assert world.leftovers() == []
    assert world.load_balancers_changed() == {}
    janitor = [e.method for e in fake.mutating_requests() if e.client_id == "lbhc-e2e-janitor"]
    assert janitor == ["POST", "DELETE", "DELETE"]  # detach, then check, then firewall


# -- the VM switch, against the Compute fake's instances over a real socket -----------------

SWITCH_PROJECT = "p"
SWITCH_ZONE = "us-central1-a"
SWITCH_KEY = "lbhc-e2e-node-state"


def instance_path(name: str) -> str:
    return f"/compute/v1/projects/{SWITCH_PROJECT}/zones/{SWITCH_ZONE}/instances/{name}"


def switch_requests(fake: ComputeFake) -> list[tuple[str, str, int]]:
    """(method, path tail, status) of what google-cloud-compute sent (not the test's own
    requests, which carry no User-Agent)."""
    prefix = f"/compute/v1/projects/{SWITCH_PROJECT}/zones/{SWITCH_ZONE}/"
    return [(e.method, e.path.removeprefix(prefix), e.status) for e in fake.journal if e.user_agent]


def test_the_node_state_switch_keeps_other_metadata_and_retries_a_moved_fingerprint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NodeStateSwitch with google-cloud-compute against the Compute fake over its socket:
    setMetadata carries the fingerprint just read and every other item; when another writer
    changes the metadata between that read and the write, the fake's 412 makes it read
    again; the zone operation, still PENDING when setMetadata answers, is waited for."""
    from google.auth.credentials import AnonymousCredentials

    from tests.e2e.gcp import NodeStateSwitch

    fake = ComputeFake(operation_latency=0.2)
    fake.add_instance(SWITCH_PROJECT, SWITCH_ZONE, "node-0", metadata={"startup-script": "x"})
    first_fingerprint = fake.instances(SWITCH_PROJECT, SWITCH_ZONE)["node-0"]["metadata"][
        "fingerprint"
    ]
    vm = VmNode("node-0", SWITCH_ZONE, "10.128.0.2")
    path = instance_path("node-0")
    serve = fake.handle
    meddled: list[str] = []

    def handle(
        method: str,
        url: str,
        query: Any = None,
        headers: Any = None,
        body: bytes | str | None = b"",
    ) -> tuple[int, dict[str, str], bytes]:
        answer = serve(method, url, query, headers, body)
        if method == "GET" and url == path and not meddled:
            # Another writer adds an item right after the switch's first read, and its
            # operation is DONE before the switch writes.
            read = json.loads(answer[2])["metadata"]
            items = [*read["items"], {"key": "ssh-keys", "value": "alice:ssh-ed25519 AAAA"}]
            change = {"fingerprint": read["fingerprint"], "items": items}
            status, _, raw = serve("POST", f"{path}/setMetadata", None, {}, json.dumps(change))
            assert status == 200, raw
            operation = json.loads(raw)["name"]
            zone = f"/compute/v1/projects/{SWITCH_PROJECT}/zones/{SWITCH_ZONE}"
            serve("POST", f"{zone}/operations/{operation}/wait")
            meddled.append(operation)
        return answer

    monkeypatch.setattr(fake, "handle", handle)
    with ComputeFakeServer(fake) as server:
        switch = NodeStateSwitch(AnonymousCredentials(), SWITCH_PROJECT, SWITCH_KEY, server.url)
        switch.set(vm, NODE_STATE_DELETING)
        assert switch.get(vm) == NODE_STATE_DELETING

    assert meddled, "the other writer never ran"
    sent = [
        e.body or {}
        for e in fake.journal
        if e.user_agent and e.path.endswith(f"{path}/setMetadata")
    ]
    assert sent[0]["fingerprint"] == first_fingerprint
    assert sent[1]["fingerprint"] not in (first_fingerprint, "")
    assert sent[1]["items"] == [
        {"key": "startup-script", "value": "x"},
        {"key": "ssh-keys", "value": "alice:ssh-ed25519 AAAA"},
        {"key": SWITCH_KEY, "value": NODE_STATE_DELETING},
    ]
    requests = switch_requests(fake)
    assert [(method, status) for method, _, status in requests[:4]] == [
        ("GET", 200),  # read: fingerprint 1
        ("POST", 412),  # setMetadata: the fingerprint moved meanwhile
        ("GET", 200),  # read again
        ("POST", 200),  # setMetadata: PENDING operation
    ]
    assert requests[4][0] == "POST" and requests[4][1].startswith("operations/")
    assert requests[4][1].endswith("/wait")  # zoneOperations.wait until DONE
    assert fake.instance_metadata(SWITCH_PROJECT, SWITCH_ZONE, "node-0") == {
        "startup-script": "x",
        "ssh-keys": "alice:ssh-ed25519 AAAA",
        SWITCH_KEY: NODE_STATE_DELETING,
    }


def test_the_node_state_switch_reports_a_failed_operation_and_skips_a_no_op() -> None:
    """A setMetadata operation that ends DONE with an error (injected by the fake) is
    reported with its HTTP status and error; the metadata is left as it was. Removing an
    attribute that is not set only reads."""
    from google.auth.credentials import AnonymousCredentials

    from tests.e2e.gcp import NodeStateSwitch

    fake = ComputeFake(operation_latency=0.2)
    metadata = {"startup-script": "x", SWITCH_KEY: NODE_STATE_DELETING}
    fake.add_instance(SWITCH_PROJECT, SWITCH_ZONE, "node-0", metadata=metadata)
    vm = VmNode("node-0", SWITCH_ZONE, "10.128.0.2")
    fake.faults.fail_operations(
        status=403,
        reason="forbidden",
        message="Required 'compute.instances.setMetadata' permission",
        operation_type="setMetadata",
    )
    with ComputeFakeServer(fake) as server:
        switch = NodeStateSwitch(AnonymousCredentials(), SWITCH_PROJECT, SWITCH_KEY, server.url)
        assert switch.get(vm) == NODE_STATE_DELETING
        target = re.escape(f"{COMPUTE_URL_PREFIX}projects/{SWITCH_PROJECT}/zones/")
        with pytest.raises(
            RuntimeError,
            match=rf"setMetadata on {target}.*/node-0 failed: 403 FORBIDDEN "
            r"FORBIDDEN: Required 'compute.instances.setMetadata' permission",
        ):
            switch.set(vm, None)
        assert fake.instance_metadata(SWITCH_PROJECT, SWITCH_ZONE, "node-0") == metadata
        assert [m for m, _, _ in switch_requests(fake)] == ["GET", "GET", "POST", "POST"]

        fake.clear_journal()
        other = NodeStateSwitch(AnonymousCredentials(), SWITCH_PROJECT, "other-key", server.url)
        other.set(vm, None)  # not set at all: removing it sends nothing
        assert switch_requests(fake) == [("GET", "instances/node-0", 200)]


class IamCredentialsStandIn:
    """The one IAM Service Account Credentials call impersonation makes,
    `POST /v1/projects/-/serviceAccounts/{account}:generateAccessToken`, served on a real
    socket: 403 in that API's error shape while the caller may not impersonate, a token once
    `granted`. It records what it was asked, to check who asked for what."""

    def __init__(self, account: str) -> None:
        from lbhc.sandbox.streaming import StreamingServer
        from tests.e2e.gcp import GENERATE_ACCESS_TOKEN_PATH

        self.path = GENERATE_ACCESS_TOKEN_PATH.format(account)
        self.granted = False
        self.asked: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.server = StreamingServer(self._serve, "iam-credentials-stand-in")

    def _serve(
        self, method: str, path: str, headers: Any, body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        json_type = {"Content-Type": "application/json; charset=UTF-8"}
        if method != "POST" or path != self.path:
            error = {"code": 404, "message": "Not found", "status": "NOT_FOUND"}
            return 404, json_type, json.dumps({"error": error}).encode()
        self.asked.append((path, {k.lower(): v for k, v in headers.items()}, json.loads(body)))
        if self.granted:
            token = {"accessToken": "stand-in-token", "expireTime": "2099-01-01T00:00:00Z"}
            return 200, json_type, json.dumps(token).encode()
        permission = "iam.serviceAccounts.getAccessToken"
        error = {
            "code": 403,
            "message": f"Permission '{permission}' denied on resource (or it may not exist).",
            "status": "PERMISSION_DENIED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "IAM_PERMISSION_DENIED",
                    "domain": "iam.googleapis.com",
                    "metadata": {"permission": permission},
                }
            ],
        }
        return 403, json_type, json.dumps({"error": error}).encode()


def test_lbhc_runs_as_the_controller_account_impersonated_from_adc(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Impersonation against a local stand-in for the IAM credentials endpoint: ADC's token
    asks for the controller account with the compute scope only; a denial is reported with
    what to grant and no token; ADC is used as is when it already is the account or when
    impersonation is switched off."""
    from google.auth.credentials import AnonymousCredentials
    from google.oauth2.credentials import Credentials as UserCredentials

    from lbhc.gce.config import make_credentials
    from tests.e2e.gcp import (
        COMPUTE_SCOPE,
        IMPERSONATE_ENV,
        controller_credentials,
        lbhc_runs_as,
    )

    account = "lbhc-e2e-lbhc@p.iam.gserviceaccount.com"

    class AlreadyTheAccount(AnonymousCredentials):
        service_account_email = account

    already = AlreadyTheAccount()
    assert controller_credentials(already, account) is already
    monkeypatch.setenv(IMPERSONATE_ENV, "0")
    anonymous = AnonymousCredentials()
    assert controller_credentials(anonymous, account) is anonymous
    monkeypatch.delenv(IMPERSONATE_ENV)

    adc = UserCredentials(token="adc-token")  # a signed-in user's ADC, token already fresh
    iam = IamCredentialsStandIn(account)
    with iam.server:
        with pytest.raises(RuntimeError) as denied:
            controller_credentials(adc, account, iam_endpoint=iam.server.url)
        message = str(denied.value)
        assert f"cannot impersonate {account}" in message and "TokenCreator" in message
        assert "adc-token" not in message and denied.value.__cause__ is None

        iam.granted = True
        impersonated = controller_credentials(adc, account, iam_endpoint=iam.server.url)

    assert impersonated.token == "stand-in-token"
    assert impersonated.service_account_email == account
    assert len(iam.asked) == 2
    for path, headers, body in iam.asked:
        assert path == f"/v1/projects/-/serviceAccounts/{account}:generateAccessToken"
        assert headers["authorization"] == "Bearer adc-token"  # asked as ADC
        assert body["scope"] == [COMPUTE_SCOPE] and body["lifetime"] == "3600s"

    marker = AnonymousCredentials()
    with lbhc_runs_as(marker, "p"):
        assert make_credentials("https://compute.googleapis.com") is marker
    assert make_credentials("http://127.0.0.1:1") is not marker
