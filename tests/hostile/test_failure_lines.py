"""Every way a one-shot command can fail to read what it needs, through the real CLI against
the fakes on real sockets: exactly one line on stderr, `lbhc: error: ` then what could not be
read, where (the flag, the path, the host:port) and the fix; exit code 2 when the fix is a
flag, setting or file, 1 when something is down or refused; nothing on stdout (never "No
changes" from a view lbhc could not read) and never a traceback. One line also means no
retry warnings came first: a retried call logs one per attempt."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lbhc.cli.parser import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from lbhc.planner.hold import HOLD_ANNOTATION, HOLD_VALUE
from lbhc.sandbox.streaming import StreamingServer
from tests.builders import PROJECT, REGION
from tests.builders.kube import (
    KUBE_SYSTEM_UID,
    kubernetes_service,
    namespace,
    node,
    service,
    with_annotations,
    with_ingress_ip,
)
from tests.hostile.cli import Outcome, run_cli
from tests.hostile.conftest import Fakes, free_port
from tests.kube_fixtures import write_kubeconfig


@dataclass
class World:
    """The fakes, and what a case may point lbhc at instead of them."""

    fakes: Fakes
    tmp: Path
    monkeypatch: pytest.MonkeyPatch
    not_compute: dict[int, str]  # status -> a web server answering it with HTML for everything
    dead_url: str = field(default_factory=lambda: f"http://127.0.0.1:{free_port()}")

    def kubeconfig(self, text: str, name: str = "kubeconfig") -> str:
        path = self.tmp / name
        path.write_text(text)
        return str(path)

    def dead_kubeconfig(self) -> str:
        return str(write_kubeconfig(self.tmp, self.dead_url))


Value = str | Callable[[World], str]


@dataclass(frozen=True)
class Case:
    id: str
    argv: Callable[[World], list[str]]  # the command and the flags that differ from the base
    code: int
    says: Callable[[World], list[str]]  # fragments of the one line
    setup: Callable[[World], object] = lambda w: None


def flags(w: World, **overrides: Value) -> list[str]:
    """The base flags, against the fakes; an override of "" leaves the flag out."""
    values: dict[str, Value] = {
        "project": PROJECT,
        "region": REGION,
        "node-tags": "gke-node",
        "cluster-id": "hostile",
        "gce-endpoint": w.fakes.compute_url,
        "kubeconfig": str(w.fakes.kubeconfig),
    }
    values.update(overrides)
    given = {key: value(w) if callable(value) else value for key, value in values.items()}
    return [f"--{key}={value}" for key, value in given.items() if value]


def plan(**overrides: Value) -> Callable[[World], list[str]]:
    return lambda w: ["plan", *flags(w, **overrides)]


def command(name: str, *extra: str, **overrides: Value) -> Callable[[World], list[str]]:
    return lambda w: [name, *extra, *flags(w, **overrides)]


def dead_kube(name: str) -> Callable[[World], list[str]]:
    return lambda w: [name, *flags(w, kubeconfig=w.dead_kubeconfig())]


def kube_fault(status: int, path: str) -> Callable[[World], object]:
    return lambda w: w.fakes.kube.faults.fail_requests(times=5, status=status, path_contains=path)


def gce_fault(status: int, reason: str, message: str = "") -> Callable[[World], object]:
    return lambda w: w.fakes.compute.faults.fail_requests(
        times=10, status=status, reason=reason, message=message or None
    )


def broken_node(w: World) -> None:
    bad = node("broken")
    bad["spec"]["taints"] = [{"effect": "NoSchedule"}]  # no key: no API server sends this
    w.fakes.kube.upsert(bad)


def held_node_unpatchable(w: World) -> None:
    """A node carrying lbhc's hold, which lbhc's identity may no longer patch."""
    w.fakes.kube.upsert(node("held", with_annotations({HOLD_ANNOTATION: HOLD_VALUE})))
    w.fakes.kube.faults.fail_requests(times=5, status=403, path_contains="/api/v1/nodes/held")


def no_kubeconfig_anywhere(w: World) -> None:
    w.monkeypatch.setenv("HOME", str(w.tmp / "home"))
    w.monkeypatch.delenv("KUBECONFIG", raising=False)
    w.monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


def kubeconfig_env(w: World) -> None:
    w.monkeypatch.setenv("KUBECONFIG", str(w.tmp / "nowhere" / "config"))
    w.monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


def missing_credentials_file(w: World) -> None:
    w.monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(w.tmp / "missing-key.json"))


def snapshot_plan(text: str, *extra: str, **overrides: Value) -> Callable[[World], list[str]]:
    """`plan --cluster-snapshot` of a file holding `text`."""

    def argv(w: World) -> list[str]:
        path = w.tmp / "dump.json"
        path.write_text(text)
        return ["plan", *extra, f"--cluster-snapshot={path}", *flags(w, **overrides)]

    return argv


def dump(*items: dict[str, object]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)})


IN_NO_REGION = dump(
    node("node-1"),
    service("web", with_ingress_ip("203.0.113.7")),
    kubernetes_service(),
    namespace("kube-system", KUBE_SYSTEM_UID),
)
NO_NAMESPACE = dump(node("node-1"), kubernetes_service())

KUBE_AT = "context 'fake' of kubeconfig"
KUBECONFIG_DOC = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"

CASES = [
    # -- the Kubernetes API server cannot be read: exit 1, never a plan --------------------
    *(
        Case(
            f"kube-unreachable-{name}",
            dead_kube(name),
            EXIT_ERROR,
            lambda w: ["cannot list nodes", w.dead_url, KUBE_AT, "connection refused"],
        )
        for name in ("plan", "apply", "status")
    ),
    Case(
        "kube-unreachable-release-holds",
        lambda w: ["release-holds", f"--kubeconfig={w.dead_kubeconfig()}"],
        EXIT_ERROR,
        lambda w: ["cannot list nodes", w.dead_url, KUBE_AT, "connection refused"],
    ),
    Case(
        "release-holds-patch-forbidden",
        lambda w: ["release-holds", f"--kubeconfig={w.fakes.kubeconfig}"],
        EXIT_ERROR,
        lambda w: [
            f"cannot remove {HOLD_ANNOTATION} from Node held",
            "HTTP 403",
            "lbhc's RBAC for patching nodes",
            "is gone or missing",
            "run `lbhc release-holds` before `kubectl delete -k`, or with an admin kubeconfig",
        ],
        held_node_unpatchable,
    ),
    Case(
        "kube-nodes-forbidden",
        plan(),
        EXIT_ERROR,
        lambda w: ["cannot list nodes", "HTTP 403", "allow `list nodes`", "rbac.yaml"],
        kube_fault(403, "/api/v1/nodes"),
    ),
    Case(
        "kube-credentials-refused",
        plan(),
        EXIT_ERROR,
        lambda w: ["cannot list nodes", "HTTP 401", KUBE_AT, "renew them"],
        kube_fault(401, "/api/v1/nodes"),
    ),
    Case(
        "kube-services-unavailable",
        command("status"),
        EXIT_ERROR,
        lambda w: ["cannot list services", "HTTP 503", w.fakes.kube_url, "try again"],
        kube_fault(503, "/api/v1/services"),
    ),
    Case(
        "kube-proxy-pods-failing",
        plan(),
        EXIT_ERROR,
        lambda w: ["cannot list kube-proxy Pods in kube-system", "HTTP 500", KUBE_AT],
        kube_fault(500, "/pods"),
    ),
    Case(
        "gce-pools-list-forbidden-status",
        command("status"),
        EXIT_ERROR,
        lambda w: [
            f"cannot list target pools in project {PROJECT}, region {REGION}",
            "403 forbidden",
            "compute.targetPools.list",
        ],
        lambda w: w.fakes.compute.faults.fail_requests(
            times=10, status=403, reason="forbidden", path_contains="/targetPools"
        ),
    ),
    Case(
        "kube-undecodable-node",
        plan(),
        EXIT_ERROR,
        lambda w: ["nodes: 1 object(s) could not be decoded", "broken: spec.taints.0.key"],
        broken_node,
    ),
    # -- the kubeconfig: exit 2, naming the file and how to point at another -------------------
    Case(
        "kubeconfig-nowhere",
        plan(kubeconfig=""),
        EXIT_USAGE,
        lambda w: [
            f"{w.tmp}/home/.kube/config does not exist",
            "KUBECONFIG is unset",
            "in-cluster config is not available",
            "pass --kubeconfig or set KUBECONFIG",
        ],
        no_kubeconfig_anywhere,
    ),
    Case(
        "kubeconfig-env-names-nothing",
        plan(kubeconfig=""),
        EXIT_USAGE,
        lambda w: [f"KUBECONFIG={w.tmp}/nowhere/config names no file", "--kubeconfig"],
        kubeconfig_env,
    ),
    Case(
        "kubeconfig-a-list",
        lambda w: ["plan", *flags(w, kubeconfig=w.kubeconfig("- a\n- b\n"))],
        EXIT_USAGE,
        lambda w: [f"kubeconfig {w.tmp}/kubeconfig is not a kubeconfig", "got a list"],
    ),
    Case(
        "kubeconfig-a-string",
        lambda w: ["plan", *flags(w, kubeconfig=w.kubeconfig("just words\n"))],
        EXIT_USAGE,
        lambda w: [f"kubeconfig {w.tmp}/kubeconfig is not a kubeconfig", "got a string"],
    ),
    Case(
        "kubeconfig-not-yaml",
        lambda w: ["plan", *flags(w, kubeconfig=w.kubeconfig("clusters: [ {name: a\n"))],
        EXIT_USAGE,
        lambda w: [f"kubeconfig {w.tmp}/kubeconfig is not valid YAML (line 2)"],
    ),
    Case(
        "kubeconfig-empty",
        lambda w: ["plan", *flags(w, kubeconfig=w.kubeconfig(""))],
        EXIT_USAGE,
        lambda w: [f"kubeconfig {w.tmp}/kubeconfig is empty"],
    ),
    Case(
        "kubeconfig-no-current-context",
        lambda w: ["plan", *flags(w, kubeconfig=w.kubeconfig(KUBECONFIG_DOC))],
        EXIT_USAGE,
        lambda w: ["sets no current-context: pass --context (it has none)"],
    ),
    Case(
        "kubeconfig-no-such-context",
        command("plan", "--context=prod"),
        EXIT_USAGE,
        lambda w: [f"kubeconfig {w.fakes.kubeconfig} has no context 'prod' (it has: fake)"],
    ),
    Case(
        "kubeconfig-context-without-cluster",
        lambda w: [
            "plan",
            *flags(
                w,
                kubeconfig=w.kubeconfig(
                    KUBECONFIG_DOC.replace(
                        "contexts: []", "contexts: [{name: c, context: {cluster: gone, user: u}}]"
                    ).replace("users: []", "users: [{name: u, user: {}}]")
                    + "current-context: c\n"
                ),
            ),
        ],
        EXIT_USAGE,
        lambda w: ["context 'c' of kubeconfig", "names cluster 'gone'", "does not define"],
    ),
    # -- a view lbhc cannot trust: exit 2, the fix is a file or a flag ----------------------
    Case(
        "snapshot-missing",
        lambda w: ["plan", f"--cluster-snapshot={w.tmp}/none.json", *flags(w)],
        EXIT_USAGE,
        lambda w: [f"cluster snapshot {w.tmp}/none.json: cannot read: No such file"],
    ),
    Case(
        "snapshot-not-json",
        snapshot_plan("{not json"),
        EXIT_USAGE,
        lambda w: ["dump.json: not valid JSON (line 1", "kubectl get nodes,services"],
    ),
    Case(
        "snapshot-without-nodes",
        snapshot_plan(dump(kubernetes_service())),
        EXIT_USAGE,
        lambda w: ["no Node in it (found 1 Service)", "lbhc needs the cluster's Nodes"],
    ),
    Case(
        "snapshot-without-services",
        snapshot_plan(dump(node("node-1"))),
        EXIT_USAGE,
        lambda w: ["no Service in it (found 1 Node)", "lbhc needs the cluster's Nodes"],
    ),
    Case(
        "cluster-id-unknown",
        snapshot_plan(NO_NAMESPACE, **{"cluster-id": ""}),
        EXIT_USAGE,
        lambda w: ["cluster id unknown: set --cluster-id"],
    ),
    Case(
        "load-balancers-not-in-region",
        snapshot_plan(IN_NO_REGION, region="europe-west1"),
        EXIT_USAGE,
        lambda w: [
            "none of the 1 LoadBalancer Service(s) with an ingress IP",
            f"project {PROJECT}, region europe-west1: check --project and --region",
        ],
    ),
    Case(
        "load-balancers-not-in-region-detailed-exitcode",
        snapshot_plan(IN_NO_REGION, "--detailed-exitcode", region="europe-west1"),
        EXIT_ERROR,  # 2 means "changes" there
        lambda w: ["none of the 1 LoadBalancer Service(s) with an ingress IP"],
    ),
    Case(
        "teardown-cluster-id-names-nothing",
        lambda w: [
            "teardown",
            f"--project={PROJECT}",
            f"--region={REGION}",
            "--cluster-id=typo1234",
            f"--gce-endpoint={w.fakes.compute_url}",
        ],
        EXIT_USAGE,
        lambda w: [
            f"nothing of lbhc's for cluster typo1234 in project {PROJECT}",
            "check --cluster-id and --project",
        ],
    ),
    Case(
        "invalid-setting",
        command("plan", "--health-check-mode=sometimes"),
        EXIT_USAGE,
        lambda w: ["invalid settings: setting 'health_check.mode'", "--health-check-mode"],
    ),
    # -- the Compute API endpoint -------------------------------------------------------------
    Case(
        "gce-unreachable-plan",
        plan(**{"gce-endpoint": lambda w: w.dead_url}),
        EXIT_ERROR,
        lambda w: [
            "cannot reach the Compute API at",
            w.dead_url,
            "connection refused",
            "--gce-endpoint",
        ],
    ),
    Case(
        "gce-unreachable-teardown",
        lambda w: [
            "teardown",
            f"--project={PROJECT}",
            f"--region={REGION}",
            f"--gce-endpoint={w.dead_url}",
        ],
        EXIT_ERROR,
        lambda w: ["cannot reach the Compute API at", w.dead_url, "--gce-endpoint"],
    ),
    Case(
        "gce-endpoint-not-compute",
        plan(**{"gce-endpoint": lambda w: w.not_compute[404]}),
        EXIT_USAGE,
        lambda w: [
            f"{w.not_compute[404]} is not the Compute API",
            "404 with text/html",
            "--gce-endpoint",
        ],
    ),
    Case(
        "gce-endpoint-a-web-page",
        plan(**{"gce-endpoint": lambda w: w.not_compute[200]}),
        EXIT_USAGE,
        lambda w: [
            f"{w.not_compute[200]} is not the Compute API",
            "answered 200 with text/html, not JSON",
            "--gce-endpoint",
        ],
    ),
    Case(
        "gce-project-not-found",
        plan(project="no-such-project"),
        EXIT_USAGE,
        lambda w: ["project no-such-project not found (check --project / LBHC_GCE_PROJECT)"],
    ),
    Case(
        "gce-project-not-found-detailed-exitcode",
        command("plan", "--detailed-exitcode", project="no-such-project"),
        EXIT_ERROR,  # 2 means "changes" there
        lambda w: ["project no-such-project not found"],
    ),
    Case(
        "gce-project-not-found-status",
        command("status", project="no-such-project"),
        EXIT_USAGE,
        lambda w: ["project no-such-project not found (check --project / LBHC_GCE_PROJECT)"],
    ),
    Case(
        "gce-region-not-found",
        plan(region="mars-west1"),
        EXIT_USAGE,
        lambda w: [f"region mars-west1 not found in project {PROJECT} (check --region"],
    ),
    Case(
        "gce-region-not-found-teardown",
        lambda w: [
            "teardown",
            f"--project={PROJECT}",
            "--region=mars-west1",
            "--cluster-id=hostile",
            f"--gce-endpoint={w.fakes.compute_url}",
        ],
        EXIT_USAGE,
        lambda w: [f"region mars-west1 not found in project {PROJECT} (check --region"],
    ),
    Case(
        "gce-network-project-not-found",
        command("plan", "--network-project=no-such-host"),
        EXIT_USAGE,
        lambda w: ["network project no-such-host not found (check --network-project"],
    ),
    Case(
        "gce-credentials-refused",
        plan(),
        EXIT_ERROR,
        lambda w: [
            "the Compute API refused the credentials of anonymous credentials",
            "401, and refreshing them failed",
            "renew them",
        ],
        gce_fault(401, "authError", "Request had invalid authentication credentials."),
    ),
    Case(
        "gce-permission-refused",
        plan(),
        EXIT_ERROR,
        lambda w: [
            "refused anonymous credentials (an http:// --gce-endpoint sends none) in ",
            f"project {PROJECT}",
            "403 forbidden",
            "compute.httpHealthChecks.get",
        ],
        gce_fault(403, "forbidden", "Required 'compute.httpHealthChecks.get' permission"),
    ),
    Case(
        "gce-api-disabled",
        plan(),
        EXIT_ERROR,
        lambda w: ["accessNotConfigured", f"enable the Compute Engine API in project {PROJECT}"],
        gce_fault(403, "accessNotConfigured", "Compute Engine API has not been used"),
    ),
    Case(
        "gce-credentials-missing",
        plan(**{"gce-endpoint": "https://compute.example.test"}),
        EXIT_USAGE,
        lambda w: [
            "no usable Google credentials",
            "missing-key.json was not found",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "gcloud auth application-default login",
        ],
        missing_credentials_file,
    ),
]


@pytest.fixture(scope="module")
def not_compute() -> Iterator[dict[int, str]]:
    """HTTP servers that are not the Compute API: one answers 404 with an HTML page to
    everything, one 200 (a web server's home page)."""
    page = b"<html><body><h1>Hello</h1></body></html>"
    html = {"Content-Type": "text/html"}
    with (
        StreamingServer(lambda *_: (404, html, page), "not-compute-404") as missing,
        StreamingServer(lambda *_: (200, html, page), "not-compute-200") as home,
    ):
        yield {404: missing.url, 200: home.url}


@pytest.fixture
def world(
    clean_fakes: Fakes,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    not_compute: dict[int, str],
) -> Iterator[World]:
    yield World(clean_fakes, tmp_path, monkeypatch, not_compute)
    clean_fakes.kube.faults.clear()
    clean_fakes.compute.faults.clear()
    present = {n["metadata"]["name"] for n in clean_fakes.kube.objects("Node")}
    for name in sorted(
        {"broken", "held"} & present
    ):  # what broken_node and held_node_unpatchable add
        clean_fakes.kube.delete("Node", None, name)


def assert_one_line(result: Outcome, code: int, fragments: list[str]) -> None:
    assert result.code == code, result
    assert result.out == "", result.out  # no plan, no status, no "No changes"
    assert "Traceback" not in result.err
    assert len(result.err_lines) == 1, result.err
    line = result.err_lines[0]
    assert line.startswith("lbhc: error: "), line
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_failure_is_one_line_naming_what_where_and_the_fix(
    case: Case, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    case.setup(world)
    result = run_cli(capsys, case.argv(world))
    assert_one_line(result, case.code, case.says(world))


def test_the_same_commands_succeed_against_the_fakes(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control: the base flags work, and a missing optional read (the cloud provider's
    ingress-uid ConfigMap: 404, no GCE cloud provider) is no failure."""
    for argv in (plan()(world), command("status")(world)):
        result = run_cli(capsys, argv)
        assert result.code == EXIT_OK, result
        assert result.err == ""
        assert result.out
    assert any("/configmaps/ingress-uid" in c for c in world.fakes.contacted())


def test_a_credential_in_the_kubeconfig_is_never_printed(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    token = "s3cr3t-kube-token-0123456789"
    text = Path(world.dead_kubeconfig()).read_text()
    kubeconfig = world.kubeconfig(text.replace('"user": {}', f'"user": {{"token": "{token}"}}'))
    result = run_cli(capsys, ["plan", *flags(world, kubeconfig=kubeconfig)])
    assert_one_line(result, EXIT_ERROR, ["cannot list nodes", world.dead_url])
    assert token not in result.err


# Each row of the README's exit-code table, by its first column, and the cases above that
# produce it; rows whose failure needs a process of its own name the test that checks them.
TABLE_ROWS: dict[str, tuple[str, ...]] = {
    "invalid flag or setting": ("invalid-setting",),
    "cluster snapshot missing, unreadable, not JSON or YAML, or without Nodes or Services": (
        "snapshot-missing",
        "snapshot-not-json",
        "snapshot-without-nodes",
        "snapshot-without-services",
    ),
    "cluster id unknown": ("cluster-id-unknown",),
    "none of the cluster's load balancers in the project and region": (
        "load-balancers-not-in-region",
    ),
    "`teardown --cluster-id` names nothing": ("teardown-cluster-id-names-nothing",),
    "no kubeconfig": ("kubeconfig-nowhere", "kubeconfig-env-names-nothing"),
    "kubeconfig not YAML, not a mapping, no such context": (
        "kubeconfig-not-yaml",
        "kubeconfig-a-list",
        "kubeconfig-no-such-context",
    ),
    "API server unreachable": tuple(
        f"kube-unreachable-{c}" for c in ("plan", "apply", "status", "release-holds")
    ),
    "API server refuses (401/403)": ("kube-nodes-forbidden", "kube-credentials-refused"),
    "`release-holds` may not patch nodes (403)": ("release-holds-patch-forbidden",),
    "Compute API unreachable": ("gce-unreachable-plan", "gce-unreachable-teardown"),
    "`--gce-endpoint` is not the Compute API": (
        "gce-endpoint-not-compute",
        "gce-endpoint-a-web-page",
    ),
    "project or region does not exist": ("gce-project-not-found", "gce-region-not-found"),
    "no Google credentials": ("gce-credentials-missing",),
    "GCE refuses the credentials or a permission": (
        "gce-credentials-refused",
        "gce-permission-refused",
    ),
}
ROWS_CHECKED_ELSEWHERE = {
    # A silent endpoint needs a process and a socket of its own, and the time it is bounded by.
    "API server does not answer": "tests/cli/test_deadlines.py::"
    "test_a_hung_api_server_is_one_line_within_one_request",
    "Compute API does not answer": "tests/cli/test_deadlines.py::"
    "test_a_silent_compute_endpoint_is_one_line_within_the_calls_deadline",
    "port taken": "tests/hostile/test_failure_lines_subprocess.py::"
    "test_a_taken_controller_port_ends_lbhc_run_before_it_starts",
    "Ctrl-C": "tests/controller/test_run_cli.py::"
    "test_lbhc_run_converges_logs_json_and_stops_on_a_signal",
}
README = Path(__file__).resolve().parents[2] / "README.md"


def exit_code_table() -> dict[str, int]:
    """The README's table: failure -> the exit code it states first."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### Exit codes and the one-line errors", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # less header
    table = {}
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        match = re.match(r"\d+", cells[-1])
        assert match, row
        table[cells[0]] = int(match.group())
    return table


def test_the_readme_exit_code_table_is_what_the_commands_do() -> None:
    """Walks the table: every row is produced by a case above (run by the test that walks
    CASES), with the row's exit code, or by a named test of its own."""
    table = exit_code_table()
    assert set(table) == set(TABLE_ROWS) | set(ROWS_CHECKED_ELSEWHERE)
    by_id = {case.id: case for case in CASES}
    for failure, case_ids in TABLE_ROWS.items():
        for case_id in case_ids:
            assert by_id[case_id].code == table[failure], (failure, case_id)
    root = README.parent
    for failure, test in ROWS_CHECKED_ELSEWHERE.items():
        path, name = test.split("::")
        assert f"def {name}(" in (root / path).read_text(encoding="utf-8"), failure
    assert table["Ctrl-C"] == 130 and table["port taken"] == EXIT_ERROR
