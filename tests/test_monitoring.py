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
BASE = MONITORING.parents[1] / "base"


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


def scrape_labels() -> dict[str, str]:
    """The job and namespace Prometheus gives lbhc's series through the ServiceMonitor: with no
    jobLabel, job is the selected Service's name (prometheus-operator's ServiceMonitorSpec,
    https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.ServiceMonitorSpec)."""
    monitor = yaml.safe_load((MONITORING / "servicemonitor.yaml").read_text())
    assert "jobLabel" not in monitor["spec"]
    service = yaml.safe_load((BASE / "service.yaml").read_text())
    common = yaml.safe_load((BASE / "kustomization.yaml").read_text())["labels"][0]["pairs"]
    service_labels = {**service["metadata"].get("labels", {}), **common}
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service_labels.items()
    return {"job": service["metadata"]["name"], "namespace": service["metadata"]["namespace"]}


def test_every_expression_uses_exported_metrics() -> None:
    """lbhc's own metrics, or `up` for the targets the ServiceMonitor makes (LbhcDown)."""
    exported = exported_metric_names()
    want = scrape_labels()
    for rule in rules():
        used = set(re.findall(r"\blbhc_[a-z_]+", rule["expr"]))
        ups = re.findall(r"\bup\{([^}]*)\}", rule["expr"])
        assert used or ups, rule["alert"]
        assert used <= exported, f"{rule['alert']} reads unknown metrics {used - exported}"
        for matchers in ups:
            found = dict(re.findall(r'(\w+)="([^"]*)"', matchers))
            assert found == want, f"{rule['alert']}: up{{{matchers}}} is not lbhc's target"


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


def runbook_rows(readme: str) -> dict[str, str]:
    """README's "Alerts and what to do": alert name -> its row."""
    section = readme.split("\n### Alerts and what to do\n", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| `(\w+)`[^|]*\|(.*)$", section, re.MULTILINE)
    return {name: row for name, row in rows}


def test_every_alert_has_a_runbook_line_in_the_readme() -> None:
    readme = (MONITORING.parents[2] / "README.md").read_text()
    rows = runbook_rows(readme)
    assert sorted(rows) == sorted(rule["alert"] for rule in rules())
    for name, row in rows.items():
        meaning, first_check = (cell.strip() for cell in row.rstrip(" |").split(" | "))
        assert meaning and first_check, name
