"""The environment the chart gives the operator is accepted by the operator's own settings loader."""

from __future__ import annotations

import pytest

from chart_tools import CI_VALUES, env_of, one, render

config = pytest.importorskip("forescale_operator.config", reason="the operator's settings module is not installed")


def _operator_env(values_files=(), set_values=None) -> dict[str, str]:
    env = env_of(one(render(list(values_files), set_values), "Deployment"))
    # The Downward API fills this in the cluster.
    env["POD_NAME"] = "forescale-5d9c7b-x2x4q"
    return {key: value for key, value in env.items() if isinstance(value, str)}


@pytest.mark.parametrize("values_file", CI_VALUES, ids=[p.name for p in CI_VALUES])
def test_operator_accepts_the_rendered_settings(values_file):
    loaded = config.load_config(_operator_env([values_file]))
    assert loaded.metrics_port != loaded.health_port


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({}, {"namespaces": (), "admin_token_secret": ("forescale-admin-token", "token"), "admin_token_copy_from": "forescale",
              "metrics_port": 8080, "health_port": 8081, "log_level": "INFO"}),
        ({"operator.adminTokenSecret.create": "false"}, {"admin_token_secret": None, "admin_token_copy_from": None}),
        (
            {"operator.namespaces": "{ml,ml-staging}", "operator.adminTokenSecret.name": "admin", "operator.adminTokenSecret.key": "tok"},
            {"namespaces": ("ml", "ml-staging"), "admin_token_secret": ("admin", "tok"), "admin_token_copy_from": None},
        ),
        ({"operator.logLevel": "CRITICAL", "operator.prometheusUrl": "https://prom.example:9090"},
         {"log_level": "CRITICAL", "prometheus_url": "https://prom.example:9090"}),
        ({"operator.peering.name": "ml-ops"}, {"peering": "ml-ops"}),
    ],
)
def test_values_reach_the_operator_settings(values, expected):
    loaded = config.load_config(_operator_env(set_values=values))
    for field, value in expected.items():
        assert getattr(loaded, field) == value, field
    assert loaded.pod_name == "forescale-5d9c7b-x2x4q"  # the peering priority's source
