"""Settings: precedence, the grouped file and its variables, 0.1's flat spellings, and the
messages that name what to fix."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from lbhc.cli.parser import build_parser
from lbhc.settings import (
    SETTING_NAMES,
    Settings,
    SettingsError,
    environment_names,
    load_settings,
)
from lbhc.settings.model import group_model

REQUIRED = {"project": "p", "region": "r", "node_tags": "a"}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in list(os.environ):
        if var.startswith("LBHC_"):
            monkeypatch.delenv(var)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def test_flags_beat_env_beat_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(
        tmp_path,
        "gce:\n  project: from-file\n  region: from-file\n  network: from-file\n  node_tags: [x]\n",
    )
    monkeypatch.setenv("LBHC_GCE_REGION", "from-env")
    monkeypatch.setenv("LBHC_GCE_NETWORK", "from-env")
    settings = load_settings(path, network="from-flag")
    assert (settings.gce.project, settings.gce.region, settings.gce.network) == (
        "from-file",
        "from-env",
        "from-flag",
    )


def test_a_group_keeps_its_defaults_for_fields_no_layer_gives(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, "health_check:\n  port: 1234\n"), **REQUIRED)
    assert settings.health_check.port == 1234
    assert settings.health_check.request_path == "/healthz"


def test_comma_lists_from_env_and_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LBHC_GCE_NODE_TAGS", "gke-a, gke-b")
    assert load_settings(project="p", region="r").gce.node_tags == ["gke-a", "gke-b"]
    assert load_settings(**{**REQUIRED, "node_tags": "x,y"}).gce.node_tags == ["x", "y"]


def test_defaults_match_upstream_timings() -> None:
    cfg = load_settings(**REQUIRED).planner_config()
    assert (
        cfg.port,
        cfg.request_path,
        cfg.check_interval_sec,
        cfg.timeout_sec,
        cfg.healthy_threshold,
        cfg.unhealthy_threshold,
    ) == (10256, "/healthz", 8, 1, 1, 3)
    # kubeadm's DaemonSet, kube-up's and GKE's static Pods, Gardener's DaemonSets, in order.
    assert cfg.kube_proxy_selectors == (
        (("k8s-app", "kube-proxy"),),
        (("component", "kube-proxy"), ("tier", "node")),
        (("app", "kubernetes"), ("role", "proxy")),
    )
    one = load_settings(**REQUIRED, kube_proxy_selector="name=kp").planner_config()
    assert one.kube_proxy_selectors == ((("name", "kp"),),)


def test_a_settings_object_built_directly_reads_no_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only load_settings reads the environment: code that builds Settings itself gets
    exactly what it passed."""
    monkeypatch.setenv("LBHC_HEALTH_CHECK_PORT", "1234")
    settings = Settings(gce={"project": "p", "region": "r", "node_tags": ["t"]})
    assert settings.health_check.port == 10256


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"timeout_sec": 9},
            "health_check.timeout_sec (9) must not exceed health_check.check_interval_sec (8)",
        ),
        (
            {"port": 70000},
            "setting 'health_check.port': Input should be less than or equal to 65535",
        ),
        ({"request_path": "healthz"}, "expected an absolute path"),
        ({"base_name": "K8S"}, "setting 'health_check.base_name': expected a GCE name prefix"),
        ({"kube_proxy_selector": "k8s-app in (a)"}, "expected equality label selectors"),
        ({"unknown_version_policy": "maybe"}, "setting 'kube_proxy.unknown_version_policy'"),
        ({"node_tags": "ok,Not A Tag"}, "setting 'gce.node_tags': 'Not A Tag': expected a GCE"),
        ({"load_balancer_classes": "a/b,c d"}, "'c d': expected a qualified name"),
        ({"kube_proxy_namespace": "Kube_System"}, "expected a DNS label"),
    ],
)
def test_invalid_values_name_the_setting(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(**{**REQUIRED, **overrides})
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("projct: typo\n", "setting 'projct': unknown setting in .* \\(did you mean 'gce.project'"),
        ("gce:\n  projetc: typo\n", "setting 'gce.projetc': unknown .* 'gce.project'"),
        ("gke:\n  project: p\n", "setting 'gke': unknown setting in"),
        ("gce: 5\n", "setting 'gce': expected a mapping of gce settings \\(project, region"),
        ("gce:\n  project: p\nproject: q\n", "'gce.project': given twice in .* as project"),
        ("replace_foreign_health_checks: true\n", "no longer exists: replaced by health_check"),
    ],
    ids=[
        "unknown-flat",
        "unknown-in-group",
        "unknown-group",
        "group-not-mapping",
        "twice",
        "retired",
    ],
)
def test_a_file_that_is_not_settings_names_the_key(
    tmp_path: Path, content: str, message: str
) -> None:
    with pytest.raises(SettingsError, match=message):
        load_settings(write(tmp_path, content), **REQUIRED)


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="not found"):
        load_settings(tmp_path / "nope.yaml", **REQUIRED)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("project: [unclosed\n", "not valid YAML"),
        ("- project\n- region\n", "expected a YAML mapping"),
    ],
    ids=["broken-yaml", "not-a-mapping"],
)
def test_malformed_config_file_is_one_clear_error(
    tmp_path: Path, content: str, message: str
) -> None:
    with pytest.raises(SettingsError, match=message):
        load_settings(write(tmp_path, content), **REQUIRED)


def test_a_missing_required_setting_says_every_way_to_give_it(tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(write(tmp_path, ""), project="p", node_tags="t")
    assert str(caught.value) == (
        "invalid settings: setting 'gce.region': required: pass --region, set LBHC_GCE_REGION, "
        f"or add `region:` under `gce:` to {tmp_path / 'c.yaml'}"
    )


def test_gce_settings_reach_the_client_config() -> None:
    settings = load_settings(
        **REQUIRED,
        gce_mutations_per_second=3,
        gce_reads_per_second=7,
        gce_max_attempts=4,
        gce_backoff_initial_sec=0.5,
        gce_backoff_max_sec=9,
        gce_operation_timeout_sec=120,
        gce_request_timeout_sec=12,
    )
    cfg = settings.gce_client_config(read_only=True, client_id="me")
    assert (
        cfg.mutations_per_second,
        cfg.reads_per_second,
        cfg.max_attempts,
        cfg.backoff_initial_sec,
        cfg.backoff_max_sec,
        cfg.operation_timeout_sec,
        cfg.request_timeout_sec,
        cfg.read_only,
        cfg.client_id,
    ) == (3, 7, 4, 0.5, 9, 120, 12, True, "me")


def test_run_settings_come_from_flags_env_and_file_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lbhc run`'s flags are settings like any other: a Deployment can set them in its
    ConfigMap or environment, with the same precedence."""
    path = write(
        tmp_path,
        "leader_election:\n  enabled: false\n  lease_duration: 30\n"
        "controller:\n  resync_period: 10m\nhttp:\n  address: 127.0.0.1:9000\n"
        "log:\n  format: text\n",
    )
    monkeypatch.setenv("LBHC_CONTROLLER_RESYNC_PERIOD", "90s")
    monkeypatch.setenv("LBHC_CONTROLLER_DRY_RUN", "true")
    settings = load_settings(path, **REQUIRED, http_address="0.0.0.0:10258")
    assert settings.leader_election.enabled is False  # file
    assert settings.leader_election.lease_duration == 30.0  # file, a bare number is seconds
    assert settings.controller.resync_period == 90.0  # env beats file
    assert settings.controller.dry_run is True  # env
    assert settings.http.address == "0.0.0.0:10258"  # flag beats file
    assert settings.log.format == "text"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"resync_period": "0s"}, "controller.resync_period"),
        ({"resync_period": "5"}, "with a unit, like 30s"),  # as a flag would refuse it
        ({"http_address": "nowhere"}, "expected HOST:PORT"),
        ({"leader_elect_resource_namespace": "Not_A_Label"}, "DNS label"),
        (
            {"leader_elect_renew_deadline": "20s"},
            "retry_period < renew_deadline < lease_duration, got 2s, 20s and 15s",
        ),
    ],
    ids=["zero-duration", "bare-number", "address", "namespace", "lease-order"],
)
def test_invalid_run_settings_are_one_clear_line(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(SettingsError, match=message) as raised:
        load_settings(**{**REQUIRED, **overrides})
    assert len(str(raised.value).splitlines()) == 1


def test_lease_order_is_not_checked_without_leader_election() -> None:
    settings = load_settings(**REQUIRED, leader_elect=False, leader_elect_renew_deadline=20.0)
    assert settings.leader_election.renew_deadline == 20.0


# 0.1 read flat names from the file and the environment: a ConfigMap written then must keep
# working after an upgrade, saying what to write instead.
OLD_SPELLINGS = [
    ("port: 1234\n", {}, "the flat key port: in", "health_check.port", 1234),
    (
        "kube_proxy_namespace: kp\n",
        {},
        "write it under kube_proxy: as namespace:",
        "kube_proxy.namespace",
        "kp",
    ),
    (
        "",
        {"LBHC_PORT": "1234"},
        "LBHC_PORT is deprecated; set LBHC_HEALTH_CHECK_PORT",
        "health_check.port",
        1234,
    ),
    (
        "",
        {"LBHC_LEADER_ELECT": "false"},
        "set LBHC_LEADER_ELECTION_ENABLED instead",
        "leader_election.enabled",
        False,
    ),
]


@pytest.mark.parametrize(
    ("content", "env", "warning", "path", "value"), OLD_SPELLINGS, ids=lambda v: str(v)[:24]
)
def test_an_old_spelling_still_works_and_says_the_new_one(
    content: str,
    env: dict[str, str],
    warning: str,
    path: str,
    value: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name, text in env.items():
        monkeypatch.setenv(name, text)
    config = write(tmp_path, content) if content else None
    with caplog.at_level(logging.WARNING, logger="lbhc.settings"):
        settings = load_settings(config, **REQUIRED)
    assert [r.getMessage() for r in caplog.records if warning in r.getMessage()], caplog.text
    assert len(caplog.records) == 1
    group, field = path.split(".")
    assert getattr(getattr(settings, group), field) == value


def test_the_new_names_warn_of_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("LBHC_HEALTH_CHECK_PORT", "1234")
    monkeypatch.setenv("LBHC_GCE_ENDPOINT", "http://127.0.0.1:1")  # the same name in 0.1
    with caplog.at_level(logging.WARNING, logger="lbhc.settings"):
        load_settings(write(tmp_path, "kube_proxy:\n  namespace: kp\n"), **REQUIRED)
    assert caplog.records == []


def test_an_old_and_a_new_variable_together_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Which would win is not obvious, so neither does."""
    monkeypatch.setenv("LBHC_PORT", "1")
    monkeypatch.setenv("LBHC_HEALTH_CHECK_PORT", "2")
    with pytest.raises(SettingsError, match="both LBHC_HEALTH_CHECK_PORT and LBHC_PORT are set"):
        load_settings(**REQUIRED)


def test_an_invalid_old_spelling_says_where_it_came_from(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("LBHC_PORT", "0")
    with pytest.raises(SettingsError, match="got '0' from LBHC_PORT"):
        load_settings(**REQUIRED)
    assert caplog.records == []  # the error alone: the warning waits for usable settings


def test_every_field_has_exactly_one_name_and_one_variable() -> None:
    fields = {
        f"{group}.{field}"
        for group in Settings.model_fields
        for field in group_model(Settings, group).model_fields
    }
    paths = [name.path for name in SETTING_NAMES]
    assert sorted(paths) == sorted(fields)
    assert len({name.env for name in SETTING_NAMES}) == len(SETTING_NAMES)
    assert len({name.argument for name in SETTING_NAMES}) == len(SETTING_NAMES)
    # An old variable never means another setting's new one.
    news = {name.env: name.path for name in SETTING_NAMES}
    for name in SETTING_NAMES:
        assert news.get(name.flat_env, name.path) == name.path, name
    assert "LBHC_GCE_PROJECT" in environment_names() and "LBHC_PROJECT" in environment_names()


def test_every_setting_named_a_flag_is_one() -> None:
    parser = build_parser()
    run = parser._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    flags = {option for action in run._actions for option in action.option_strings}
    for name in SETTING_NAMES:
        assert (name.flag in flags) == name.is_flag, name


def test_an_unknown_variable_is_warned_with_the_setting_it_resembles(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The same typo in the file is an error; in the environment, shared with other tools,
    it is a warning, but never silence."""
    monkeypatch.setenv("LBHC_GCE_REGIOM", "europe-west1")
    with caplog.at_level(logging.WARNING, logger="lbhc.settings"):
        settings = load_settings(**REQUIRED)
    assert settings.gce.region == "r"
    assert [r.getMessage() for r in caplog.records] == [
        "variable LBHC_GCE_REGIOM is no lbhc setting and is ignored (did you mean LBHC_GCE_REGION?)"
    ]


def test_an_unknown_variable_joins_the_error_it_may_explain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LBHC_GCE_PROJEKT", "p")
    with pytest.raises(SettingsError) as raised:
        load_settings(region="r", node_tags="a")
    lines = str(raised.value).splitlines()
    assert lines[0].startswith("invalid settings: setting 'gce.project': required")
    assert lines[1:] == [
        "variable LBHC_GCE_PROJEKT is no lbhc setting and is ignored "
        "(did you mean LBHC_GCE_PROJECT?)"
    ]


def test_every_setting_variable_old_or_new_is_known() -> None:
    from lbhc.settings.load import unknown_variables

    names = {n.env: "1" for n in SETTING_NAMES} | {n.flat_env: "1" for n in SETTING_NAMES}
    assert unknown_variables(names) == []
