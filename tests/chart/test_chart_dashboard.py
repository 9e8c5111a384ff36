"""The Grafana dashboard: valid JSON, shipped in the chart's ConfigMap, every PromQL
expression parses (promtool, on a rule file made of the dashboard's queries) and reads
only known metrics."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from chart_tools import helm_template, promtool_path, run
from chart_dashboard_queries import dashboard as _dashboard
from chart_dashboard_queries import exprs as _exprs
from chart_dashboard_queries import panels as _panels
from chart_dashboard_queries import substitute as _substitute
from chart_metric_names import KNOWN_METRICS, metric_names


def test_dashboard_loads_with_its_variables():
    dashboard = _dashboard()
    assert dashboard["uid"] == "forescale-operator"
    names = {v["name"] for v in dashboard["templating"]["list"]}
    assert names == {"datasource", "namespace", "name"}
    ids = [panel["id"] for panel in _panels(dashboard["panels"])]
    assert len(ids) == len(set(ids)), "panel ids must be unique"


@pytest.mark.parametrize(
    "needle",
    [
        "forescale_operator_observed_latency_ms",  # latency ...
        "forescale_operator_forecast_peak_latency_ms",  # ... vs the forecast band
        "forescale_operator_desired_replicas",  # replicas per pool
        "forescale_operator_weight_percent",  # weights
        "forescale_operator_phase",  # phase
        "forescale_operator_decision_duration_seconds_bucket",  # decision time
    ],
)
def test_dashboard_shows_what_the_issue_asks_for(needle):
    assert any(needle in expr for _, expr in _exprs())


def test_every_expression_parses(tmp_path):
    exprs = _exprs()
    rules = []
    for i, (title, expr) in enumerate(exprs):
        concrete = _substitute(expr)
        assert "$" not in concrete, f"panel {title!r}: unsubstituted variable in {expr}"
        rules.append({"record": f"dashboard:expr_{i}", "expr": concrete})
    (tmp_path / "dashboard.rules.yaml").write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = run([promtool_path(), "check", "rules", "dashboard.rules.yaml"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in result.stdout


def test_template_variable_queries_parse(tmp_path):
    queries = [v["definition"] for v in _dashboard()["templating"]["list"] if v["type"] == "query"]
    # label_values(SELECTOR, label) is Grafana's; its selector is PromQL.
    selectors = [re.fullmatch(r"label_values\((.*), *\w+\)", q).group(1) for q in queries]
    rules = [{"record": f"dashboard:var_{i}", "expr": _substitute(s)} for i, s in enumerate(selectors)]
    (tmp_path / "vars.rules.yaml").write_text(yaml.safe_dump({"groups": [{"name": "vars", "rules": rules}]}))
    result = run([promtool_path(), "check", "rules", "vars.rules.yaml"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("title", "expr"), _exprs(), ids=[t for t, _ in _exprs()])
def test_expressions_read_only_known_metrics(title, expr):
    names = metric_names(expr)
    assert names, f"panel {title!r} reads no forescale metric"
    assert names <= KNOWN_METRICS, f"panel {title!r} reads unknown metrics {names - KNOWN_METRICS}"


#: operator-wide series (the operator's own work, not one resource's): no namespace to filter by
OPERATOR_WIDE = {"forescale_operator_decision_duration_seconds_bucket", "forescale_operator_ticks_total",
                 "forescale_operator_reconciles_total"}


@pytest.mark.parametrize(("title", "expr"), _exprs(), ids=[t for t, _ in _exprs()])
def test_per_resource_panels_follow_the_namespace_variable(title, expr):
    """Two resources of one name in two namespaces must not share a panel."""
    for selector in re.finditer(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}", expr):
        name, matchers = selector.groups()
        if name in OPERATOR_WIDE or "$name" not in matchers:
            continue
        assert 'namespace=~"$namespace"' in matchers, f"panel {title!r}: {name} ignores the namespace: {expr}"


def test_configmap_ships_the_same_dashboard():
    result = helm_template(set_values={"metrics.dashboard.namespace": "monitoring"}, show_only="templates/dashboard-configmap.yaml")
    assert result.returncode == 0, result.stderr
    configmap = yaml.safe_load(result.stdout)
    assert configmap["metadata"]["namespace"] == "monitoring"
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(configmap["data"]["forescale.json"]) == _dashboard()
