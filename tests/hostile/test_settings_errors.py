"""Every invalid setting, from every source it can come from (flag, LBHC_* variable, --config
YAML), through the real `lbhc run` entry point: exactly one line on stderr naming the
setting, what it expects and where the value came from; exit code 2 (EXIT_USAGE; 1 only
under `plan --detailed-exitcode`, where 2 means "changes"); and nothing started (no port
bound, no request to either fake)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from lbhc.cli.parser import EXIT_USAGE
from lbhc.settings import FLAG_SETTINGS, SETTING_NAMES, lookup
from tests.builders import PROJECT, REGION
from tests.hostile.cli import Outcome, run_cli
from tests.hostile.conftest import Fakes, free_port, port_is_free


@dataclass(frozen=True)
class Bad:
    key: str  # the flat name: the flag's (--key), where it is one
    value: str
    says: str  # a fragment of the message: what the setting expects

    @property
    def path(self) -> str:
        return lookup(self.key).path

    @property
    def id(self) -> str:
        return f"{self.key}={self.value[:20]!r}"


BAD_VALUES = (
    Bad("project", "", "expected a GCE project id"),
    Bad("project", "my project", "expected a GCE project id"),
    Bad("region", "us central1", "expected a GCE region"),
    Bad("network", "", "expected a VPC network name"),
    Bad("network", "projects/p/global/subnetworks/x", "expected a VPC network name"),
    Bad("node_tags", "", "expected one or more network tags"),
    Bad("node_tags", "gke-node,BAD TAG", "'BAD TAG': expected a GCE name"),
    Bad("gce_endpoint", "ftp://x", "expected a URL"),
    Bad("gce_endpoint", "http://127.0.0.1:1/compute/v1", "no path"),
    Bad("gce_mutations_per_second", "0", "greater than 0"),
    Bad("gce_mutations_per_second", "inf", "expected a finite number"),
    Bad("gce_reads_per_second", "fast", "expected a finite number greater than 0"),
    Bad("gce_max_attempts", "1.5", "expected an integer from 1 to 20"),
    Bad("gce_backoff_initial_sec", "nan", "expected a finite number"),
    Bad("gce_backoff_max_sec", "-1", "greater than 0"),
    Bad("gce_operation_timeout_sec", "0", "greater than 0"),
    Bad("gce_connect_timeout_sec", "0", "greater than 0"),
    Bad("gce_request_timeout_sec", "0", "greater than 0"),
    Bad("gce_request_timeout_sec", "601", "less than or equal to 600"),
    Bad("gce_call_timeout_sec", "0", "greater than 0"),
    Bad("gce_call_timeout_sec", "soon", "expected a finite number greater than 0 and at most 3600"),
    Bad("max_concurrent_pool_calls", "65", "less than or equal to 64"),
    Bad("cluster_id", "Bad_Id", "expected 1-32 lowercase letters"),
    Bad("base_name", "K8S", "expected a GCE name prefix"),
    Bad("port", "70000", "less than or equal to 65535"),
    Bad("port", "http", "expected an integer from 1 to 65535"),
    Bad("request_path", "healthz", "expected an absolute path"),
    Bad("request_path", "/health z", "expected an absolute path"),
    Bad("check_interval_sec", "301", "less than or equal to 300"),
    Bad(
        "timeout_sec",
        "9",
        "health_check.timeout_sec (9) must not exceed health_check.check_interval_sec (8)",
    ),
    Bad("healthy_threshold", "0", "greater than or equal to 1"),
    Bad("unhealthy_threshold", "11", "less than or equal to 10"),
    Bad("raise_only_timings", "maybe", "expected true or false"),
    Bad("health_check_mode", "replace", "'coexist' or 'takeover'"),
    Bad("unblock_probes", "sometimes", "expected true or false"),
    Bad(
        "load_balancer_classes",
        "example.com/a,not a class",
        "'not a class': expected a qualified name",
    ),
    Bad("opt_out_annotation", "not an annotation!", "expected a qualified name"),
    Bad("unknown_version_policy", "maybe", "'fallback' or 'assume-supported'"),
    Bad("replacement_serves_healthz", "perhaps", "'auto', 'yes' or 'no'"),
    Bad("kube_proxy_namespace", "Kube_System", "expected a DNS label"),
    Bad("kube_proxy_selector", "k8s-app in (kube-proxy)", "expected equality label selectors"),
    Bad("fallback_policy", "assume-version latest", "expected any-old-node, never"),
    Bad("kube_proxy_draining_gate", "on", "'unknown', 'enabled' or 'disabled'"),
    Bad("readiness_policy", "yes", "'off', 'audit' or 'enforce'"),
    Bad("hold_deletion", "yes", "'off' or 'on'"),
    Bad("hold_release_margin_sec", "601", "less than or equal to 600"),
    Bad("hold_writes_per_sec", "0", "greater than 0"),
    Bad("hold_autoscaler_timeout_sec", "5", "longer than hold.release_margin_sec"),
    Bad("probe_refusal_window_sec", "0", "greater than or equal to 1"),
    Bad("network_project", "host project", "expected a GCE project id"),
    Bad("lb_health_sample_sec", "-1", "greater than or equal to 0"),
    Bad("lb_health_reads_per_minute", "2000", "less than or equal to 1500"),
    Bad("readiness_selector", "=x", "expected equality label selectors"),
    Bad("probe_kube_proxy", "perhaps", "expected true or false"),
    Bad("probe_interval_sec", "3601", "less than or equal to 3600"),
    Bad("probe_timeout_sec", "0", "greater than 0"),
    Bad("kubeconfig", "/nonexistent/kubeconfig", "expected the path of a kubeconfig file"),
    Bad("context", " ", "expected the name of a context"),
    Bad("kube_connect_timeout_sec", "-5", "greater than 0"),
    Bad("kube_request_timeout_sec", "nan", "expected a finite number greater than 0"),
    # lbhc run's: flags, LBHC_* and the file alike (flags are also checked as they parse,
    # with the same words)
    Bad("dry_run", "maybe", "true or false"),
    Bad("leader_elect", "sometimes", "true or false"),
    Bad("resync_period", "abc", "expected a number with a unit"),
    Bad("leader_elect_lease_duration", "5", "expected a number with a unit"),
    Bad("leader_elect_renew_deadline", "1x", "expected a number with a unit"),
    Bad("leader_elect_retry_period", "2 s", "expected a number with a unit"),
    Bad("http_address", "bogus", "expected HOST:PORT"),
    Bad("log_format", "xml", "'json'"),
    Bad("leader_elect_resource_namespace", "Bad_NS", "expected a DNS label"),
    Bad("leader_elect_resource_name", "-x", "expected a DNS subdomain name"),
)
SOURCES = ("flag", "env", "file")


def cases() -> list[object]:
    return [
        pytest.param(bad, source, id=f"{source}:{bad.id}")
        for bad in BAD_VALUES
        for source in SOURCES
        if source != "flag" or (bad.key in FLAG_SETTINGS and bad.key not in CHECKED_AS_PARSED)
    ]


# Run flags whose values argparse checks as it parses them: a bad one is a usage error naming
# the flag (test_an_invalid_run_flag_is_one_clear_line), before any setting is read.
CHECKED_AS_PARSED = frozenset(
    {"dry_run", "leader_elect", "resync_period", "http_address", "log_format"}
    | {"leader_elect_lease_duration", "leader_elect_renew_deadline", "leader_elect_retry_period"}
)


def base_flags(fakes: Fakes, port: int) -> dict[str, str]:
    """Valid flags for `lbhc run` against the fakes; a case replaces or removes one."""
    return {
        "project": PROJECT,
        "region": REGION,
        "node_tags": "gke-node",
        "cluster_id": "hostile",
        "gce_endpoint": fakes.compute_url,
        "kubeconfig": str(fakes.kubeconfig),
    } | {"http_address": f"127.0.0.1:{port}", "leader_elect": "false"}


def argv(flags: dict[str, str], *extra: str) -> list[str]:
    args = ["run"]
    for key, value in flags.items():
        args += [f"--{key.replace('_', '-')}={value}"]
    return [*args, *extra]


def assert_one_clear_line(result: Outcome, *fragments: str) -> None:
    assert result.code == EXIT_USAGE, result
    assert result.out == ""
    assert len(result.err_lines) == 1, result.err
    line = result.err_lines[0]
    assert line.startswith("lbhc: error: "), line
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"


def assert_nothing_started(fakes: Fakes, port: int) -> None:
    assert fakes.contacted() == []
    assert port_is_free(port), f"something is listening on 127.0.0.1:{port}"


def test_the_table_covers_every_setting() -> None:
    """A new setting must come with an invalid value here."""
    assert {bad.path for bad in BAD_VALUES} == {name.path for name in SETTING_NAMES}


@pytest.mark.parametrize(("bad", "source"), cases())
def test_an_invalid_setting_is_one_line_naming_it_and_nothing_starts(
    bad: Bad,
    source: str,
    clean_fakes: Fakes,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = free_port()
    flags = base_flags(clean_fakes, port)
    flags.pop(bad.key, None)  # flags beat env and file: leave the key to the source tested
    extra: list[str] = []
    where = f"--{bad.key.replace('_', '-')}"
    if source == "flag":
        flags[bad.key] = bad.value
    elif source == "env":
        where = lookup(bad.key).env
        monkeypatch.setenv(where, bad.value)
    else:
        config = tmp_path / "lbhc.yaml"
        group, field = bad.path.split(".")
        config.write_text(yaml.safe_dump({group: {field: bad.value}}))
        where, extra = str(config), ["--config", str(config)]

    result = run_cli(capsys, argv(flags, *extra))

    assert_one_clear_line(result, f"setting '{bad.path}'", bad.says, f"from {where}")
    assert_nothing_started(clean_fakes, port)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("project: [unclosed\n", "not valid YAML: line 2, column 1: expected ',' or ']'"),
        ("\tproject: p\n", "not valid YAML: line 1, column 1"),
        ("- project\n- region\n", "expected a YAML mapping of setting: value, got a list"),
        ("just a string\n", "expected a YAML mapping of setting: value, got a string"),
        ("projct: typo\n", "setting 'projct': unknown setting in"),
        ("node_tag: x\n", "(did you mean 'gce.node_tags'?)"),
        ("gce:\n  node_tag: x\n", "setting 'gce.node_tag': unknown setting in"),
        ("health_check: [port]\n", "expected a mapping of health_check settings"),
        ("project: !!python/object:os.system {}\n", "not valid YAML"),
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", "lbhc.yaml"),
        ("health_check:\n  port: {a: 1}\n", "'health_check.port': Input should be a valid integer"),
    ],
    ids=[
        "broken-yaml",
        "tab-indent",
        "a-list",
        "a-scalar",
        "unknown-key",
        "did-you-mean",
        "unknown-in-group",
        "group-not-a-mapping",
        "python-tag",
        "deeply-nested",
        "mapping-for-int",
    ],
)
def test_a_bad_config_file_is_one_clear_line(
    content: str,
    says: str,
    clean_fakes: Fakes,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = free_port()
    config = tmp_path / "lbhc.yaml"
    config.write_text(content)
    result = run_cli(capsys, argv(base_flags(clean_fakes, port), "--config", str(config)))
    assert_one_clear_line(result, says)
    assert_nothing_started(clean_fakes, port)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda d: d / "missing.yaml", "missing.yaml: not found"),
        (lambda d: d, "not a regular file"),
        (lambda d: _write_bytes(d / "latin1.yaml", b"project: caf\xe9\n"), "not UTF-8 text"),
    ],
    ids=["missing", "a-directory", "not-utf8"],
)
def test_an_unreadable_config_file_is_one_clear_line(
    make: object,
    says: str,
    clean_fakes: Fakes,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = free_port()
    path = make(tmp_path)  # type: ignore[operator]
    result = run_cli(capsys, argv(base_flags(clean_fakes, port), "--config", str(path)))
    assert_one_clear_line(result, f"config file {path}", says)
    assert_nothing_started(clean_fakes, port)


def _write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("resync_period", "abc", "expected a number with a unit"),
        ("resync_period", "0s", "expected more than zero"),
        ("leader_elect_lease_duration", "5", "expected a number with a unit"),
        ("http_address", "bogus", "expected HOST:PORT"),
        ("http_address", "127.0.0.1:99999", "expected HOST:PORT"),
        ("dry_run", "maybe", "expected true or false"),
        ("log_format", "xml", "invalid choice: 'xml'"),
    ],
)
def test_an_invalid_run_flag_is_one_clear_line(
    flag: str, value: str, says: str, clean_fakes: Fakes, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    flags = base_flags(clean_fakes, port) | {flag: value}
    result = run_cli(capsys, argv(flags))
    assert_one_clear_line(result, f"--{flag.replace('_', '-')}", says, "lbhc run --help")
    assert_nothing_started(clean_fakes, port)


def test_inconsistent_lease_timings_are_one_clear_line(
    clean_fakes: Fakes, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    flags = base_flags(clean_fakes, port) | {
        "leader_elect": "true",
        "leader_elect_renew_deadline": "20s",
    }
    result = run_cli(capsys, argv(flags))
    assert_one_clear_line(
        result,
        "retry_period < renew_deadline < lease_duration",
        "--leader-elect-renew-deadline",
    )
    assert_nothing_started(clean_fakes, port)


def test_several_invalid_settings_give_one_line_each(
    clean_fakes: Fakes, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    monkeypatch.setenv("LBHC_HEALTH_CHECK_PORT", "0")
    monkeypatch.setenv("LBHC_READINESS_POLICY", "loud")
    result = run_cli(capsys, argv(base_flags(clean_fakes, port)))
    assert result.code == EXIT_USAGE
    assert sorted(result.err_lines) == [
        "lbhc: error: invalid settings: setting 'health_check.port': Input should be greater "
        "than or equal to 1 (got '0' from LBHC_HEALTH_CHECK_PORT)",
        "lbhc: error: invalid settings: setting 'readiness.policy': Input should be 'off', "
        "'audit' or 'enforce' (got 'loud' from LBHC_READINESS_POLICY)",
    ]
    assert_nothing_started(clean_fakes, port)


def test_a_credential_in_an_invalid_endpoint_is_never_echoed(
    clean_fakes: Fakes, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = base_flags(clean_fakes, free_port()) | {
        "gce_endpoint": "https://user:s3cr3t@example.com/compute"
    }
    result = run_cli(capsys, argv(flags))
    assert_one_clear_line(result, "setting 'gce.endpoint'", "//***@example.com")
    assert "s3cr3t" not in result.err


def test_a_missing_required_setting_says_every_way_to_give_it(
    clean_fakes: Fakes, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    flags = base_flags(clean_fakes, port)
    del flags["node_tags"]
    result = run_cli(capsys, argv(flags))
    assert_one_clear_line(
        result, "setting 'gce.node_tags': required: pass --node-tags, set LBHC_GCE_NODE_TAGS"
    )
    assert_nothing_started(clean_fakes, port)


def test_a_base_name_and_cluster_id_too_long_together_are_refused_up_front(
    clean_fakes: Fakes, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each is valid alone; together they name no GCE resource (found by the planner fuzz)."""
    port = free_port()
    monkeypatch.setenv("LBHC_HEALTH_CHECK_BASE_NAME", "a" * 42)
    flags = base_flags(clean_fakes, port) | {"cluster_id": "b" * 32}
    result = run_cli(capsys, argv(flags))
    assert_one_clear_line(
        result, "setting 'health_check.base_name'", "would be 75 characters; expected at most 63"
    )
    assert_nothing_started(clean_fakes, port)
