"""`lbhc apply` as a terraform user expects it: the question on a terminal, each change
streamed as it completes, and Ctrl-C that finishes the calls in flight, starts no new one and
says what was and was not done. The executor's stop and the progress stream run against the
Compute fake over a real socket; the terminal behaviour runs `lbhc` as a process on a pty."""

from __future__ import annotations

import io
import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lbhc.cli import main
from lbhc.cli.apply import ApplyDeclined, Progress, confirm, interrupted_summary
from lbhc.executor import NOT_STARTED, Executor, Status
from lbhc.model.plan import Action, Plan
from lbhc.planner.planner import plan as make_plan
from tests.builders import PROJECT, cluster, config, names, node, service
from tests.cli.terminal import Pty
from tests.cli.test_oneshot import gce_args, kubectl_list
from tests.conftest import ComputeEnv

_, NAME, URL = names()


class Terminal(io.StringIO):
    """A text stream that says it is a terminal, as sys.stderr does on one."""

    def isatty(self) -> bool:
        return True


def planned(compute: ComputeEnv, pools: int) -> Plan:
    svcs = tuple(service(f"svc-{i}") for i in range(pools))
    for svc in svcs:
        compute.add_service_pool(svc)
    return make_plan(cluster(services=svcs), compute.client().read_snapshot(NAME), config())


# ---- the executor's stop ---------------------------------------------------------------


def test_stop_lets_the_call_in_flight_finish_and_starts_no_other(compute: ComputeEnv) -> None:
    the_plan = planned(compute, pools=5)
    seen: list[tuple[str, Status, str]] = []
    executor = Executor(
        compute.client(),
        max_concurrency=1,
        on_outcome=lambda o: seen.append((o.change.name, o.status, o.detail)),
    )
    # Ctrl-C arrives just as the first attach reaches GCE.
    compute.fake.faults.on_request(executor.stop, path_contains="addHealthCheck")

    result = executor.apply(the_plan)

    attaches = [o for o in result.outcomes if o.change.action is Action.ATTACH]
    assert [o.status for o in attaches] == [Status.DONE] + [Status.SKIPPED] * 4
    assert all(o.detail == NOT_STARTED for o in attaches[1:])
    # What it reports is what GCE holds: exactly one pool got the check, and no request
    # was made after the stop but the one in flight.
    assert sum(compute.pool_checks(o.change.name) == [URL] for o in attaches) == 1
    assert [e.path for e in compute.fake.mutating_requests()][-1].endswith("addHealthCheck")
    assert len(seen) == len(the_plan.changes)


def test_outcomes_are_reported_once_each_as_they_happen(compute: ComputeEnv) -> None:
    the_plan = planned(compute, pools=6)
    reported: list[str] = []
    executor = Executor(compute.client(), 4, on_outcome=lambda o: reported.append(o.change.name))
    result = executor.apply(the_plan)
    assert result.ok
    assert sorted(reported) == sorted(c.name for c in the_plan.changes)


# ---- the stream and the progress line ---------------------------------------------------


@pytest.mark.parametrize(
    ("stream", "terminal", "lines", "live"),
    [
        (True, True, 8, True),  # text on a terminal: stream and live line
        (True, False, 8, False),  # text to a pipe: stream only
        (False, True, 0, True),  # JSON on a terminal: stdout stays pure JSON
        (False, False, 0, False),
    ],
    ids=["text-tty", "text-pipe", "json-tty", "json-pipe"],
)
def test_progress_streams_numbered_lines_and_draws_only_on_a_terminal(
    compute: ComputeEnv, stream: bool, terminal: bool, lines: int, live: bool
) -> None:
    the_plan = planned(compute, pools=6)
    out, err = io.StringIO(), Terminal() if terminal else io.StringIO()
    progress = Progress(len(the_plan.changes), out, err, stream=stream)
    Executor(compute.client(), 4, on_outcome=progress.record).apply(the_plan)
    progress.finish()

    streamed = out.getvalue().splitlines()
    assert len(streamed) == lines
    assert [s.split("]")[0] for s in streamed] == [f"[{i}/8" for i in range(1, lines + 1)]
    assert all(s.endswith(": done") for s in streamed)
    assert ("Applying: 8/8 (0 failed)" in err.getvalue()) is live
    # The live line is erased at the end, so what follows starts on a clean line.
    assert err.getvalue().endswith("\r\x1b[K") is live


def test_changes_a_stop_kept_from_starting_are_counted_not_streamed(
    compute: ComputeEnv,
) -> None:
    the_plan = planned(compute, pools=4)
    out = io.StringIO()
    progress = Progress(len(the_plan.changes), out, io.StringIO(), stream=True)
    executor = Executor(compute.client(), 1, on_outcome=progress.record)
    compute.fake.faults.on_request(executor.stop, path_contains="addHealthCheck")
    result = executor.apply(the_plan)

    assert len(out.getvalue().splitlines()) == 3  # firewall, check, the attach in flight
    summary = interrupted_summary(the_plan, result)
    assert summary[0].startswith("Interrupted: 3 of 6 changes done, 3 not done.")
    assert len([s for s in summary if s.startswith("  not done: attach TargetPool")]) == 3


# ---- the question ----------------------------------------------------------------------


class Keyboard(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stdin", "auto_approve", "asks", "proceeds"),
    [
        (Keyboard("yes\n"), False, True, True),
        (Keyboard("y\n"), False, True, False),  # only a literal yes, as terraform
        (Keyboard(""), False, True, False),  # end of input
        (Keyboard("no\n"), True, False, True),
        (io.StringIO("no\n"), False, False, True),  # a pipe or CI: nobody to ask
    ],
    ids=["yes", "y", "eof", "auto-approve", "not-a-terminal"],
)
def test_the_question_is_asked_only_of_a_person_and_only_yes_approves(
    compute: ComputeEnv, stdin: io.StringIO, auto_approve: bool, asks: bool, proceeds: bool
) -> None:
    the_plan = planned(compute, pools=1)
    out = io.StringIO()
    if proceeds:
        confirm(the_plan, stdin, out, auto_approve)
    else:
        with pytest.raises(ApplyDeclined, match="--auto-approve"):
            confirm(the_plan, stdin, out, auto_approve)
    assert ("Only 'yes' will be accepted" in out.getvalue()) is asks


def test_a_plan_without_changes_asks_nothing(compute: ComputeEnv) -> None:
    out = io.StringIO()
    confirm(planned(compute, pools=0), Keyboard(""), out, auto_approve=False)
    assert out.getvalue() == ""


# ---- the real command on a terminal ------------------------------------------------------


@pytest.fixture
def terminal(compute: ComputeEnv, tmp_path: Path) -> Iterator[Callable[..., Pty]]:
    sessions: list[Pty] = []

    def start(pools: int, *extra: str) -> Pty:
        svcs = [service(f"svc-{i}") for i in range(pools)]
        names = [compute.add_service_pool(svc) for svc in svcs]
        snapshot = tmp_path / "cluster.json"
        snapshot.write_text(json.dumps(kubectl_list(node(), *svcs)))
        # One pool call at a time, each operation slow enough to interrupt in the middle.
        env = {**os.environ, "LBHC_GCE_MAX_CONCURRENT_POOL_CALLS": "1"}
        argv = ["apply", "--cluster-snapshot", str(snapshot), *gce_args(compute), *extra]
        session = Pty(argv, env)
        session.pools = names
        sessions.append(session)
        return session

    yield start
    for session in sessions:
        session.close()


def test_no_at_the_question_changes_nothing_and_exits_1(
    compute: ComputeEnv, terminal: Callable[..., Pty]
) -> None:
    session = terminal(2)
    session.wait_for(lambda shown: "Enter a value:" in shown)
    session.type("no\n")
    assert session.exit_code() == 1
    assert "lbhc: error: apply cancelled: the answer was not 'yes'" in session.output
    assert compute.fake.mutating_requests() == []


def test_ctrl_c_finishes_the_call_in_flight_says_what_is_left_and_exits_130(
    compute: ComputeEnv, terminal: Callable[..., Pty]
) -> None:
    compute.fake.operation_latency = 0.3
    session = terminal(8)
    session.wait_for(lambda shown: "Enter a value:" in shown)
    session.type("yes\n")
    session.wait_for(lambda shown: "[3/10] attach TargetPool" in shown)
    assert "Applying: " in session.output  # the live progress line, on a terminal
    session.process.send_signal(signal.SIGINT)

    assert session.exit_code() == 130, session.text
    shown = session.text
    assert "Interrupted: waiting for the calls in flight to finish" in shown
    done = [line for line in shown.splitlines() if line.rstrip().endswith(": done")]
    summary = next(line for line in shown.splitlines() if " changes done, " in line)
    done_count = int(summary.split()[1])
    # What it says was done is exactly what GCE holds, and the rest waits for the next run.
    attached = [p for p in session.pools if compute.pool_checks(p) == [URL]]
    assert done_count == len(done) == len(attached) + 2
    assert 0 < len(attached) < 8
    assert "not done: attach TargetPool" in shown


def test_teardown_asks_on_a_terminal_and_streams_like_apply(
    compute: ComputeEnv, tmp_path: Path
) -> None:
    """Uninstalling is the most destructive thing lbhc does: the same question, the same
    stream, the same account of what was done."""
    pools = [compute.add_service_pool(service(f"svc-{i}")) for i in range(2)]
    snapshot = tmp_path / "cluster.json"
    snapshot.write_text(json.dumps(kubectl_list(node(), service("svc-0"), service("svc-1"))))
    setup = ["apply", "--auto-approve", "--cluster-snapshot", str(snapshot), *gce_args(compute)]
    assert main(setup) == 0 and all(compute.pool_checks(p) == [URL] for p in pools)
    cluster_id = NAME.rsplit("-", 1)[1]
    argv = ["teardown", "--cluster-id", cluster_id, *gce_args(compute)[:4], *gce_args(compute)[6:]]

    declined = Pty(argv, dict(os.environ))
    try:
        declined.wait_for(lambda shown: "Enter a value:" in shown)
        declined.type("no\n")
        assert declined.exit_code() == 1
    finally:
        declined.close()
    assert all(compute.pool_checks(p) == [URL] for p in pools)  # nothing was touched

    approved = Pty(argv, dict(os.environ))
    try:
        approved.wait_for(lambda shown: "Enter a value:" in shown)
        approved.type("yes\n")
        assert approved.exit_code() == 0, approved.text
    finally:
        approved.close()
    assert "[4/4] delete Firewall" in approved.text
    assert all(compute.pool_checks(p) == [] for p in pools)


def test_json_on_a_terminal_needs_auto_approve_and_changes_nothing(
    compute: ComputeEnv, terminal: Callable[..., Pty]
) -> None:
    """A question in the middle of JSON, about a plan not yet shown, helps nobody."""
    session = terminal(2, "--output", "json")
    assert session.exit_code() == 2, session.text
    lines = [line for line in session.text.splitlines() if line.strip()]
    assert lines == ["lbhc: error: apply --output json on a terminal needs --auto-approve"]
    assert compute.fake.mutating_requests() == []


def applied_one_service(compute: ComputeEnv, tmp_path: Path) -> tuple[str, Path]:
    """One Service's pool carrying lbhc's check after `lbhc apply`: (pool, snapshot file)."""
    pool = compute.add_service_pool(service("svc-0"))
    snapshot = tmp_path / "cluster.json"
    snapshot.write_text(json.dumps(kubectl_list(node(), service("svc-0"))))
    setup = ["apply", "--auto-approve", "--cluster-snapshot", str(snapshot), *gce_args(compute)]
    assert main(setup) == 0 and compute.pool_checks(pool) == [URL]
    return pool, snapshot


def test_teardown_takes_the_gce_flags_plan_takes(compute: ComputeEnv, tmp_path: Path) -> None:
    """A script passes the same GCE flags to plan and to teardown: teardown uses the network
    ones (where the firewall lives) and accepts the rest."""
    _, snapshot = applied_one_service(compute, tmp_path)
    cluster_id = NAME.rsplit("-", 1)[1]
    every_flag = [
        *gce_args(compute),
        "--network=default",
        f"--network-project={PROJECT}",
        "--health-check-mode=coexist",
        f"--cluster-id={cluster_id}",
    ]
    assert main(["plan", "--cluster-snapshot", str(snapshot), *every_flag]) == 0
    assert main(["teardown", "--auto-approve", *every_flag]) == 0
    assert NAME not in compute.fake.firewalls(PROJECT)


def test_teardown_of_a_cluster_id_with_nothing_lists_lbhcs_checks_and_fails(
    compute: ComputeEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped id must not read "No changes" while another cluster's check, firewall and
    attachments stay in the project."""
    pool, _ = applied_one_service(compute, tmp_path)
    cluster_id = NAME.rsplit("-", 1)[1]
    capsys.readouterr()
    compute.fake.clear_journal()

    code = main(["teardown", "--cluster-id", "typo1234", "--auto-approve", *gce_args(compute)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    [line] = err.splitlines()
    assert line.startswith(
        f"lbhc: error: nothing of lbhc's for cluster typo1234 in project {PROJECT}"
    )
    assert f"lbhc's checks in the project: {NAME} (cluster {cluster_id})" in line
    assert compute.fake.mutating_requests() == []
    assert compute.pool_checks(pool) == [URL]
