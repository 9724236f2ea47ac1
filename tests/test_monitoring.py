"""The monitoring overlay: every PrometheusRule expression and dashboard query reads a metric
lbhc really exports, and only a real kube-proxy failure pages (draining is information)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from lbhc.controller.metrics import Metrics

MONITORING = Path(__file__).resolve().parents[1] / "deploy" / "overlays" / "monitoring"
RULE = MONITORING / "prometheusrule.yaml"


def rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULE.read_text())
    assert document["kind"] == "PrometheusRule"
    return [rule for group in document["spec"]["groups"] for rule in group["rules"]]


def exported_metric_names() -> set[str]:
    names = set()
    for family in Metrics().registry.collect():
        names.add(family.name)
        if family.type == "counter":  # a labelled counter has no samples until used
            names.add(f"{family.name}_total")
    return names


def test_every_expression_uses_exported_metrics() -> None:
    exported = exported_metric_names()
    for rule in rules():
        used = set(re.findall(r"\blbhc_[a-z_]+", rule["expr"]))
        assert used, rule["alert"]
        assert used <= exported, f"{rule['alert']} reads unknown metrics {used - exported}"


def test_only_real_kube_proxy_failure_pages() -> None:
    severities = {rule["alert"]: rule["labels"]["severity"] for rule in rules()}
    assert [alert for alert, s in severities.items() if s == "critical"] == ["KubeProxyUnhealthy"]
    assert severities["NodesDrainingFromLoadBalancers"] == "info"
    assert severities["NodeNotDrainingBeforeDeletion"] == "warning"
    assert severities["HealthCheckFallbackActive"] == "warning"


def test_every_dashboard_query_uses_exported_metrics() -> None:
    exported = exported_metric_names() | {
        "lbhc_reconcile_duration_seconds_bucket"  # a histogram's series
    }
    dashboard = json.loads((MONITORING / "dashboard.json").read_text())
    assert dashboard["panels"]
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            used = set(re.findall(r"\blbhc_[a-z_]+", target["expr"]))
            assert used and used <= exported, f"{panel['title']}: {used - exported}"


def test_a_replacement_alerts_once_for_the_cluster_not_per_node() -> None:
    by_name = {rule["alert"]: rule for rule in rules()}
    assert by_name["KubeProxyReplaced"]["labels"]["severity"] == "info"
    assert "lbhc_kube_proxy_replacement" in by_name["KubeProxyReplaced"]["expr"]
    assert "lbhc_node_drain_unknown_replaced" in by_name["NodeDrainStateUnknown"]["expr"]
