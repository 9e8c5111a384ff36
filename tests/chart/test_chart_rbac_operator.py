"""The chart against the real operator.

The real operator (`forescale operator`, kopf over HTTP) runs against the
emulated API server (forescale_devcluster), creates and converges the
children of crds/examples/minimal.yaml, then handles its deletion:
- in cluster mode (-A), the chart's defaults, through an incident (a stand-in
  Prometheus reports p99 900 ms against the 200 ms SLO): the chart's token
  Secret copied from the release namespace, traffic shift, admin calls with
  the token, pods read, snapshot ConfigMap;
- in namespaced mode (-n) with Prometheus down;
- in cluster mode adopting crds/examples/adopt.yaml's workload (an existing
  Deployment scaled through deployments/scale, the HPA check, an existing
  HTTPRoute's weights shifted, then put back to 100/0 on delete) through the
  same incident.
Every request it made (the server's request log) must be allowed by the
rendered Role/ClusterRole; the Deployment's liveness probe path and metrics
port must answer with the series the dashboard and alerts read.
"""

from __future__ import annotations

import time

import pytest

from chart_tools import NAMESPACE, REPO, render
from chart_operator_run import ADMIN_SECRET, EXAMPLE, run_operator
from rbac_rules import denied_calls, load_grants

apiserver = pytest.importorskip("forescale_devcluster.apiserver", reason="the emulated API server is not installed")

USER_SECRET = {"operator.adminTokenSecret.name": ADMIN_SECRET}
#: mode -> (operator arguments, chart values, scene, example applied, where the chart's token Secret lives)
MODES = {
    "cluster": (["-A"], {}, "incident", EXAMPLE, NAMESPACE),
    "namespaced": (["-n", "default"], {"operator.namespaces": "{default}", **USER_SECRET}, "prometheus-down", EXAMPLE, None),
    "adopted": (["-A"], USER_SECRET, "incident", REPO / "crds" / "examples" / "adopt.yaml", None),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One operator run per mode, shared by the tests of this module."""
    cache = {}

    def get(mode: str):
        if mode not in cache:
            args, _, scene, example, token_home = MODES[mode]
            cache[mode] = run_operator(apiserver, args, tmp_path_factory.mktemp(mode), scene, example, token_home)
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
    # The coordination Lease: created when it takes it, updated when it renews or (at exit) releases it.
    assert {("coordination.k8s.io", "leases", "create"), ("coordination.k8s.io", "leases", "update")} <= used
    if MODES[mode][2] == "incident":
        assert {("", "configmaps", "create"), ("", "secrets", "get"), ("", "pods", "list"),
                ("gateway.networking.k8s.io", "httproutes", "patch")} <= used, "the playbook did not run"
    if MODES[mode][4]:
        assert ("", "secrets", "create") in used, "the chart's token was not copied into the resource's namespace"
    if mode == "adopted":
        assert {("apps", "deployments/scale", "patch"), ("autoscaling", "horizontalpodautoscalers", "list")} <= used
    manifests = render(set_values=MODES[mode][1])
    denied = denied_calls(load_grants(manifests, "forescale", NAMESPACE), run.calls)
    assert denied == [], f"the chart's RBAC would deny these calls of the operator: {denied}"


@pytest.mark.timeout(240)
def test_deleting_an_adopting_resource_gives_the_route_back_and_leaves_the_deployment(runs):
    """The same run: after the incident shifted the existing route, the delete put it back to 100/0."""
    left = runs("adopted").left
    assert [r["weight"] for r in left["httproutes/embed"]["spec"]["rules"][0]["backendRefs"]] == [100, 0]
    assert "ownerReferences" not in left["deployments/embed"]["metadata"] and "services/embed" in left
    assert "deployments/embed-b" not in left and "services/embed-b" not in left  # Forescale's own: collected


#: Series the dashboard's per-resource panels and the alerts read, which the operator must
#: export in each scene.
SERVED = {
    "incident": {
        "forescale_operator_phase", "forescale_operator_metrics_available", "forescale_operator_desired_replicas",
        "forescale_operator_ready_replicas", "forescale_operator_weight_percent", "forescale_operator_observed_latency_ms",
        "forescale_operator_observed_rate_rps", "forescale_operator_slo_target_ms", "forescale_operator_cutback_step",
        "forescale_operator_decision_duration_seconds_count", "forescale_operator_phase_since_seconds",
    },
    # Metrics unavailable: the phase and pools panels, and the series ForescaleMetricsUnavailable fires on.
    "prometheus-down": {
        "forescale_operator_phase", "forescale_operator_metrics_available", "forescale_operator_desired_replicas",
        "forescale_operator_ready_replicas", "forescale_operator_weight_percent", "forescale_operator_phase_since_seconds",
    },
}


def _samples(text: str) -> dict[str, float]:
    """`name{labels}` -> value for the sample lines of an exposition."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


@pytest.mark.timeout(240)
@pytest.mark.parametrize("mode", MODES)
def test_liveness_probe_answers(runs, mode):
    """The chart probes GET /healthz on FORESCALE_HEALTH_PORT."""
    assert runs(mode).health_status == 200


@pytest.mark.timeout(240)
@pytest.mark.parametrize("mode", MODES)
def test_metrics_port_serves_what_the_dashboard_and_alerts_read(runs, mode):
    """The metrics Service targets FORESCALE_METRICS_PORT; the dashboard and alerts need these series there."""
    samples = _samples(runs(mode).metrics_text)
    served = {key.split("{")[0] for key in samples}
    assert sorted(SERVED[MODES[mode][2]] - served) == []

    def value(metric: str, **labels: str) -> float | None:
        for key, v in samples.items():
            if key.startswith(metric + "{") and all(f'{k}="{val}"' in key for k, val in labels.items()):
                return v
        return None

    resource = {"namespace": "default", "name": "embed" if mode == "adopted" else "chat"}
    if MODES[mode][2] == "incident":
        assert value("forescale_operator_phase", phase="Emergency", **resource) == 1.0  # ForescaleEmergencyTooLong's series
        # ...and its clock: since when (status.lastTransitionTime), within this run
        assert time.time() - 600 < value("forescale_operator_phase_since_seconds", **resource) <= time.time()
        assert value("forescale_operator_observed_latency_ms", **resource) == pytest.approx(900.0)
        assert value("forescale_operator_metrics_available", **resource) == 1.0
    else:
        assert value("forescale_operator_metrics_available", **resource) == 0.0  # ForescaleMetricsUnavailable's series
