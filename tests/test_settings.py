"""Settings precedence and validation messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from lbhc.settings import SettingsError, load_settings

REQUIRED = {"project": "p", "region": "r", "node_tags": "a"}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for var in list(os.environ):
        if var.startswith("LBHC_"):
            monkeypatch.delenv(var)


def test_flags_beat_env_beat_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("project: from-file\nregion: from-file\nnetwork: from-file\nnode_tags: [x]\n")
    monkeypatch.setenv("LBHC_REGION", "from-env")
    monkeypatch.setenv("LBHC_NETWORK", "from-env")
    settings = load_settings(path, network="from-flag")
    assert (settings.project, settings.region, settings.network) == (
        "from-file",
        "from-env",
        "from-flag",
    )


def test_comma_lists_from_env_and_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LBHC_NODE_TAGS", "gke-a, gke-b")
    assert load_settings(project="p", region="r").node_tags == ["gke-a", "gke-b"]
    assert load_settings(**{**REQUIRED, "node_tags": "x,y"}).node_tags == ["x", "y"]


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


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"timeout_sec": 9}, "timeout_sec (9) must not exceed check_interval_sec (8)"),
        ({"port": 70000}, "setting 'port': Input should be less than or equal to 65535"),
        ({"request_path": "healthz"}, "expected an absolute path"),
        ({"base_name": "K8S"}, "setting 'base_name': expected a GCE name prefix"),
        ({"kube_proxy_selector": "k8s-app in (a)"}, "expected equality label selectors"),
        ({"unknown_version_policy": "maybe"}, "setting 'unknown_version_policy'"),
    ],
)
def test_invalid_values_name_the_setting(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(**{**REQUIRED, **overrides})
    assert message in str(caught.value)


def test_unknown_key_in_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("projct: typo\n")
    with pytest.raises(SettingsError, match="setting 'projct': unknown setting in"):
        load_settings(path, **REQUIRED)


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
    path = tmp_path / "c.yaml"
    path.write_text(content)
    with pytest.raises(SettingsError, match=message):
        load_settings(path, **REQUIRED)


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
    path = tmp_path / "c.yaml"
    path.write_text(
        "leader_elect: false\nresync_period: 10m\nhttp_address: 127.0.0.1:9000\n"
        "leader_elect_lease_duration: 30\nlog_format: text\n"
    )
    monkeypatch.setenv("LBHC_RESYNC_PERIOD", "90s")
    monkeypatch.setenv("LBHC_DRY_RUN", "true")
    settings = load_settings(path, **REQUIRED, http_address="0.0.0.0:10258")
    assert settings.leader_elect is False  # file
    assert settings.leader_elect_lease_duration == 30.0  # file, a bare number is seconds
    assert settings.resync_period == 90.0  # env beats file
    assert settings.dry_run is True  # env
    assert settings.http_address == "0.0.0.0:10258"  # flag beats file
    assert settings.log_format == "text"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"resync_period": "0s"}, "resync_period"),
        ({"resync_period": "5"}, "with a unit, like 30s"),  # as a flag would refuse it
        ({"http_address": "nowhere"}, "expected HOST:PORT"),
        ({"leader_elect_resource_namespace": "Not_A_Label"}, "DNS label"),
        (
            {"leader_elect_renew_deadline": "20s"},
            "leader_elect_retry_period < leader_elect_renew_deadline < leader_elect_lease_duration",
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
    assert settings.leader_elect_renew_deadline == 20.0
