"""Every way a one-shot command can fail to read what it needs, through the real CLI against
the fakes on real sockets: exactly one line on stderr, `lbhc: error: ` then what could not be
read, where (the flag, the path, the host:port) and the fix; exit code 2 when the fix is a
flag, setting or file, 1 when something is down or refused; nothing on stdout (never "No
changes" from a view lbhc could not read) and never a traceback. One line also means no
retry warnings came first: a retried call logs one per attempt."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lbhc.cli.parser import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from lbhc.sandbox.streaming import StreamingServer
from tests.builders import PROJECT, REGION
from tests.builders.kube import node
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


def no_kubeconfig_anywhere(w: World) -> None:
    w.monkeypatch.setenv("HOME", str(w.tmp / "home"))
    w.monkeypatch.delenv("KUBECONFIG", raising=False)
    w.monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


def kubeconfig_env(w: World) -> None:
    w.monkeypatch.setenv("KUBECONFIG", str(w.tmp / "nowhere" / "config"))
    w.monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


def missing_credentials_file(w: World) -> None:
    w.monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(w.tmp / "missing-key.json"))


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
    if any(n["metadata"]["name"] == "broken" for n in clean_fakes.kube.objects("Node")):
        clean_fakes.kube.delete("Node", None, "broken")


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
