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
