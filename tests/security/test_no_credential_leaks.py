"""No credential, token or Authorization header in anything lbhc writes: logs (debug on),
command output, /metrics, /plan, /healthz, /readyz, Events and other objects it writes, GCE
resources, and exception text. lbhc runs as real processes with a canary token on both
sides (a kubeconfig bearer token; Workload Identity's access token from a metadata server
stand-in), over TLS through taps that prove each token WAS sent, while both fakes answer
401, 403 and 500 with their real error bodies."""

from __future__ import annotations

import base64
import json
import traceback
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from google.api_core import exceptions as core
from google.oauth2.credentials import Credentials

from lbhc.cli.messages import user_message
from lbhc.gce import errors as gce_errors
from lbhc.gce.client import GceClient
from lbhc.gce.config import GceClientConfig
from lbhc.kube import client as kube_client
from lbhc.kube.client import KubeApi, KubeConfig, make_api_client
from lbhc.kube.resources import Resource
from lbhc.model.cloud import Firewall
from tests.builders import kube as kube_builders
from tests.builders.kube import kube_proxy_daemonset
from tests.chaos.record import record
from tests.controller.harness import PROJECT, REGION, world
from tests.security.canaries import GCE_ACCESS_TOKEN, KUBE_TOKEN, Scan, header_sent
from tests.security.lbhc_process import Controller, credentialed, kubeconfig
from tests.security.tap import Tap
from tests.waiting import wait_for

# Short Lease timings so a failed Lease request costs half a second, not two.
LEASE = (
    "--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s",
    "--leader-elect-retry-period", "0.5s",
)  # fmt: skip
GCE_401 = (
    "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
    "cookie or other valid authentication credential."
)


def _objects_lbhc_wrote(kinds: tuple[str, ...], fake: object) -> list[tuple[str, str]]:
    return [(kind, json.dumps(fake.objects(kind))) for kind in kinds]  # type: ignore[attr-defined]


def test_no_canary_in_any_output_of_lbhc_processes(tmp_path: Path, chaos_scale: str) -> None:
    scan = Scan()
    with world() as w, credentialed(w, tmp_path) as c:
        ds_uid = "0f6b7a52-4f1e-4d1c-9a59-1b2c3d4e5f60"
        w.kube.upsert(kube_proxy_daemonset(uid=ds_uid))
        for i in range(3):
            pod = kube_builders.kube_proxy_pod(
                f"node-{i}", version="v1.31.4", ready=True, owner_uid=ds_uid
            )
            w.kube.upsert(pod)
        pools = [w.add_service("web-0"), w.add_service("web-1")]
        w.add_service("local", policy="Local")
        # Failures with error bodies from the first requests on, on both sides.
        w.compute.faults.fail_requests(times=1, status=401, reason="authError", message=GCE_401)
        w.compute.faults.fail_requests(times=1, status=403, reason="forbidden")
        w.compute.faults.fail_requests(times=2, status=500)
        w.kube.faults.fail_requests(times=1, status=401, path_contains="/leases")
        w.kube.faults.fail_requests(times=1, status=403, path_contains="/events")
        w.kube.faults.fail_requests(times=1, status=500, path_contains="/services")

        ctl = Controller(c, "--log-level", "DEBUG", "--http-address", "127.0.0.1:0", *LEASE)
        try:
            base = ctl.url()
            wait_for(lambda: all(map(w.attached, pools)), timeout=90, what="convergence")
            # Mid-run: a failed operation, cut watches, a new Service and a draining node.
            w.compute.faults.fail_operations(times=1, status=403, reason="forbidden")
            w.kube.faults.drop_watches()
            late = w.add_service("web-late")
            w.kube.taint("node-1", "ToBeDeletedByClusterAutoscaler", "1", "NoSchedule")
            wait_for(lambda: w.attached(late), timeout=90, what="the late Service attached")
            wait_for(lambda: ctl.logged("operation"), timeout=30, what="the failed op logged")
            for path in ("/healthz", "/readyz", "/metrics", "/plan"):
                with urllib.request.urlopen(base + path, timeout=10) as response:
                    c.outputs.append((f"GET {path}", response.read().decode()))
        finally:
            assert ctl.stop() == 0
        assert any(e["level"] == "debug" for e in ctl.json_lines()), "debug logging was not on"
        assert ctl.logged("401") and ctl.logged("403") and ctl.logged("500")

        debug = ("--log-level", "DEBUG")
        # apply's text output holds the plan's text rendering and the result's.
        commands = [("apply", *debug), ("status", "--lb-health", *debug)]
        if chaos_scale == "full":
            commands += [("plan", "--output", "json", *debug), ("status", "--output", "json")]
            commands += [("apply", "--output", "json", *debug), ("plan", *debug)]
        c.lbhc(*commands)
        # One-line errors: GCE rejects the token, then (full) the Kubernetes API does.
        w.compute.faults.fail_requests(times=1, status=401, reason="authError", message=GCE_401)
        assert "401" in c.lbhc(("plan", "--output", "json", *debug), expect=1)[0]
        if chaos_scale == "full":
            w.kube.faults.fail_requests(times=50, status=401)
            assert "401" in c.lbhc(("apply", *debug), expect=1)[0]
            w.kube.faults.clear()

        # The scan means something only if the credentials were really in use.
        assert header_sent(c.kube_tap.sent(), KUBE_TOKEN)
        assert header_sent(c.compute_tap.sent(), GCE_ACCESS_TOKEN)
        assert c.metadata.tokens_served >= 1
        written = _objects_lbhc_wrote(("Event", "Lease", "DaemonSet"), w.kube)
        cloud = [(f"GCE {k}", json.dumps(w.compute.all_resources(k))) for k in ("firewalls",)]
        cloud += [("GCE httpHealthChecks", json.dumps(w.compute.all_resources("httpHealthChecks")))]
        hits = scan([*c.outputs, *written, *cloud])
        events = json.loads(written[0][1])
        assert any(e.get("reason") == "HealthCheckAttached" for e in events)

    record(
        "security", "credential-scan-processes", outputs=scan.sources, bytes=scan.bytes,
        canary_hits=len(hits), processes=1 + len(commands) + (2 if chaos_scale == "full" else 1),
    )  # fmt: skip
    assert not hits, hits


# ---- exception text, in-process: str, repr, tracebacks, describe_*_error() and user_message()


@pytest.mark.parametrize("status", [401, 403, 404, 409, 500])
def test_gce_exceptions_carry_no_token(status: int) -> None:
    with world() as w, Tap(w.compute_url) as tap:
        config = GceClientConfig(
            PROJECT, REGION, endpoint=tap.url, max_attempts=2, backoff_initial_sec=0.01,
            backoff_max_sec=0.02,
        )  # fmt: skip
        client = GceClient(config, credentials=Credentials(token=GCE_ACCESS_TOKEN))
        w.compute.faults.fail_requests(times=10, status=status, message=f"injected {status}")
        failures = _failures(
            lambda: client.list_target_pools(),
            lambda: client.remove_health_check("pool", "check-url"),
            lambda: client.insert_firewall(Firewall(name="fw", network="default")),
        )
        assert len(failures) == 3
        assert header_sent(tap.sent(), GCE_ACCESS_TOKEN)
    assert_exceptions_clean(failures, f"gce-{status}")


def test_kube_exceptions_carry_no_token(tmp_path: Path) -> None:
    with world() as w, Tap(w.kube_server.url) as tap:
        config = KubeConfig(kubeconfig=str(kubeconfig(tmp_path / "kubeconfig", tap.url)))
        api = KubeApi(make_api_client(config), config)
        failures: list[BaseException] = []
        for status in (401, 403, 404, 500):
            w.kube.faults.fail_requests(times=3, status=status)
            failures += _failures(
                lambda: api.list_page(Resource.NODES),
                lambda: api.create_event("default", {"note": "x"}),
                lambda: kube_client.read_kube_system_uid(api),
            )
            w.kube.faults.clear()
        assert len(failures) == 12
        assert header_sent(tap.sent(), KUBE_TOKEN)
    assert_exceptions_clean(failures, "kube")


def _failures(*calls: Callable[[], object]) -> list[BaseException]:
    failures: list[BaseException] = []
    for call in calls:
        try:
            call()
        except Exception as exc:
            failures.append(exc)
    return failures


def assert_exceptions_clean(failures: list[BaseException], case: str) -> None:
    scan = Scan()
    texts: list[tuple[str, str]] = []
    for exc in failures:
        name = type(exc).__name__
        texts += [
            (f"str({name})", str(exc)),
            (f"repr({name})", repr(exc)),
            (f"traceback({name})", "".join(traceback.format_exception(exc))),
            (f"describe_gce_error({name})", gce_errors.describe_gce_error(exc)),
            (f"describe_kube_error({name})", kube_client.describe_kube_error(exc)),
            (f"user_message({name})", user_message(exc) or ""),
        ]
        if isinstance(exc, core.GoogleAPICallError):
            texts.append((f"{name}.errors", repr(exc.errors)))
    hits = scan(texts)
    record("security", f"exception-scan-{case}", exceptions=len(failures),
           texts=scan.sources, bytes=scan.bytes, canary_hits=len(hits))  # fmt: skip
    assert not hits, hits


# ---- the scan itself can fail ------------------------------------------------------------


@pytest.mark.parametrize(
    "planted",
    [
        f"token={KUBE_TOKEN}",
        f"{{'authorization': 'Bearer x'}} {GCE_ACCESS_TOKEN}",
        base64.b64encode(KUBE_TOKEN.encode()).decode(),
        "GET / HTTP/1.1\r\nAuthorization: Basic dXNlcjpwYXNz\r\n",
        "headers={'authorization': 'Bearer abcdef123456'}",
        "sent Bearer abcdef123456 to the API",
    ],
)
def test_the_scan_finds_a_planted_credential(planted: str) -> None:
    assert Scan()([("planted", f"before {planted} after")])


@pytest.mark.parametrize(
    "benign",
    ["HTTP 401 Unauthorized", "GCE 403 forbidden: Required permission is missing.", "authorized"],
)
def test_the_scan_passes_ordinary_error_lines(benign: str) -> None:
    assert not Scan()([("benign", benign)])
