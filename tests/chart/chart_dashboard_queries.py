"""The PromQL queries of the chart's Grafana dashboard, with Grafana's variables substituted."""

from __future__ import annotations

import json

from chart_tools import CHART

DASHBOARD = CHART / "files" / "dashboards" / "forescale.json"
#: Grafana variables and the values they take when substituted for parsing and evaluation.
VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$namespace": ".*", "$name": "chat"}


def dashboard() -> dict:
    """The dashboard JSON."""
    return json.loads(DASHBOARD.read_text())


def panels(items: list[dict]):
    """Every panel, rows' nested panels included."""
    for panel in items:
        yield panel
        yield from panels(panel.get("panels") or [])


def exprs() -> list[tuple[str, str]]:
    """(panel title, PromQL expression) for every target of every panel."""
    return [(panel["title"], t["expr"]) for panel in panels(dashboard()["panels"]) for t in panel.get("targets", [])]


def substitute(expr: str) -> str:
    """The expression with Grafana's variables replaced by concrete values."""
    for variable, value in VARIABLES.items():
        expr = expr.replace(variable, value)
    return expr
