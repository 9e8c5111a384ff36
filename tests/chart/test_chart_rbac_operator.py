"""The chart against the real operator.

The real operator (`forescale operator`, kopf over HTTP) runs against the
emulated API server (forescale_devcluster), creates and converges the
children of crds/examples/minimal.yaml, then handles its deletion.
- Every request it made (the server's request log) must be allowed by the
  rendered Role/ClusterRole, in cluster mode (-A) and namespaced mode (-n).
- The Deployment's liveness probe path and metrics port must answer.

What this run cannot reach (an incident: snapshots, admin calls, pods,
secrets) is covered by the declared needs in test_chart_rbac.py.
"""

from __future__ import annotations

import pytest

from chart_tools import NAMESPACE, render
from chart_metric_names import OPERATOR_METRICS
from chart_operator_run import ADMIN_SECRET, run_operator
from rbac_rules import denied_calls, load_grants

apiserver = pytest.importorskip("forescale_devcluster.apiserver", reason="the emulated API server is not installed")

MODES = {"cluster": (["-A"], {}), "namespaced": (["-n", "default"], {"operator.namespaces": "{default}"})}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One operator run per mode, shared by the tests of this module."""
    cache = {}

    def get(mode: str):
        if mode not in cache:
            cache[mode] = run_operator(apiserver, MODES[mode][0], tmp_path_factory.mktemp(mode))
        return cache[mode]

    return get


@pytest.mark.timeout(240)
@pytest.mark.parametrize("mode", MODES)
def test_every_call_the_operator_makes_is_allowed(runs, mode):
    run = runs(mode)
    assert run.harness_deletes == 1, "the operator must never delete InferenceDeployments itself"
    used = {(c.group, c.full_resource, c.verb) for c in run.calls}
    # The run must have done real work, or an empty log would pass.
    assert {("apps", "deployments", "create"), ("forescale.io", "inferencedeployments/status", "patch"),
            ("forescale.io", "inferencedeployments", "watch")} <= used
    manifests = render(set_values={"operator.adminTokenSecret.name": ADMIN_SECRET, **MODES[mode][1]})
    denied = denied_calls(load_grants(manifests, "forescale", NAMESPACE), run.calls)
    assert denied == [], f"the chart's RBAC would deny these calls of the operator: {denied}"


@pytest.mark.timeout(240)
def test_liveness_probe_answers(runs):
    """The chart probes GET /healthz on FORESCALE_HEALTH_PORT."""
    assert runs("cluster").health_status == 200


#: What the operator exports for a resource even when it can read no metrics (this run's
#: Prometheus is down): the phase and pools panels, and the series ForescaleMetricsUnavailable fires on.
WITHOUT_PROMETHEUS = {
    "forescale_operator_phase",
    "forescale_operator_metrics_available",
    "forescale_operator_desired_replicas",
    "forescale_operator_ready_replicas",
    "forescale_operator_weight_percent",
}


@pytest.mark.timeout(240)
def test_metrics_port_serves_what_the_dashboard_and_alerts_read(runs):
    """The metrics Service targets FORESCALE_METRICS_PORT; the dashboard and alerts need these series there."""
    text = runs("cluster").metrics_text
    assert "forescale_operator_decision_duration_seconds_count" in text, "OperatorMetrics is not on FORESCALE_METRICS_PORT"
    served = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}
    assert sorted(WITHOUT_PROMETHEUS - served) == []
    unavailable = [line for line in text.splitlines()
                   if line.startswith("forescale_operator_metrics_available{") and 'name="chat"' in line]
    assert unavailable and float(unavailable[0].rsplit(" ", 1)[1]) == 0.0, "ForescaleMetricsUnavailable could not fire"
