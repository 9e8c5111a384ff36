"""The chart's alerts: valid rules (promtool check rules) that fire and stay quiet as
monitoring/alerts_test.yaml says (promtool test rules)."""

from __future__ import annotations

import shutil

import pytest
import yaml

from chart_tools import REPO, helm_template, promtool_path, run
from chart_metric_names import KNOWN_METRICS, metric_names

ALERT_TESTS = REPO / "monitoring" / "alerts_test.yaml"
ALERTS = {"ForescaleEmergencyTooLong", "ForescaleMetricsUnavailable", "ForescaleForecastErrorHigh", "ForescaleCutbackStuck"}


def _rules(set_values: dict[str, str] | None = None) -> dict:
    result = helm_template(
        set_values={"metrics.prometheusRule.enabled": "true", **(set_values or {})},
        show_only="templates/prometheusrule.yaml",
    )
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)["spec"]


@pytest.fixture()
def rule_dir(tmp_path):
    """The rendered rules as a plain Prometheus rule file beside a copy of the promtool tests."""
    (tmp_path / "forescale-alerts.rules.yaml").write_text(yaml.safe_dump(_rules(), sort_keys=False, width=10_000))
    shutil.copy(ALERT_TESTS, tmp_path / "alerts_test.yaml")
    return tmp_path


def test_promtool_check_rules(rule_dir):
    result = run([promtool_path(), "check", "rules", "forescale-alerts.rules.yaml"], cwd=rule_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 4 rules found" in result.stdout


def test_promtool_test_rules(rule_dir):
    result = run([promtool_path(), "test", "rules", "alerts_test.yaml"], cwd=rule_dir)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_is_unit_tested_firing_and_quiet():
    tests = yaml.safe_load(ALERT_TESTS.read_text())["tests"]
    cases = [case for test in tests for case in test.get("alert_rule_test", [])]
    firing = {c["alertname"] for c in cases if c.get("exp_alerts")}
    quiet = {c["alertname"] for c in cases if not c.get("exp_alerts")}
    assert firing == ALERTS and quiet == ALERTS


def test_alerts_read_only_known_metrics():
    rules = [rule for group in _rules()["groups"] for rule in group["rules"]]
    assert {rule["alert"] for rule in rules} == ALERTS
    for rule in rules:
        assert metric_names(rule["expr"]) <= KNOWN_METRICS, rule["alert"]


@pytest.mark.parametrize(
    ("values", "alert", "needle"),
    [
        ({"metrics.prometheusRule.emergencyTooLong.after": "2h"}, "ForescaleEmergencyTooLong", "> 7200"),
        ({"metrics.prometheusRule.cutbackStuck.after": "90s"}, "ForescaleCutbackStuck", "[90s]"),
        ({"metrics.prometheusRule.forecastErrorHigh.ratio": "0.25"}, "ForescaleForecastErrorHigh", "> 0.25"),
    ],
)
def test_thresholds_come_from_values(values, alert, needle):
    rules = {rule["alert"]: rule for group in _rules(values)["groups"] for rule in group["rules"]}
    assert needle in rules[alert]["expr"]


def test_alert_labels_are_added():
    rules = [r for g in _rules({"metrics.prometheusRule.alertLabels.team": "ml"})["groups"] for r in g["rules"]]
    assert all(rule["labels"]["team"] == "ml" and rule["labels"]["severity"] for rule in rules)
