"""End to end: the real operator, the real Prometheus and real (emulated-GPU) model servers
handle an injected slowdown of pool A, survive a kill of the operator in the middle of the
cut-back, and hold through a Prometheus outage.

One chained scenario, shortened (loop every 2 s, cut-back steps every 5 s) so that it fits
comfortably in CI on two cores. Emulated: the Kubernetes API (KMock), the kubelet (the pod
runner), the gateway and the GPUs; nothing in the operator knows it.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time

import pytest

from forescale_devcluster.arrivals import RateProfile
from forescale_devcluster.demo_scenario import DemoSettings, demo_resource
from forescale_devcluster.demo_stack import DemoStack, StackSettings, prometheus_available, wait_until
from forescale_devcluster.loadgen import LoadGenerator
from forescale_operator.readings import make_metric_source
from forescale_operator.spec import parse_spec

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(420),
    pytest.mark.skipif(not prometheus_available(), reason="needs Prometheus: apt-get install -y prometheus (make test does)"),
]

NAME = "chat"


class Load:
    """A constant open-loop load through the gateway, in a background thread."""

    def __init__(self, url: str, rate: float, seconds: float) -> None:
        self.gen = LoadGenerator(url, RateProfile((rate,), seconds, "constant"), duration_seconds=seconds, seed=1,
                                 max_concurrency=128, timeout_seconds=8.0)
        self.thread = threading.Thread(target=lambda: asyncio.run(self.gen.run()), daemon=True)

    def __enter__(self) -> "Load":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.gen.stop()
        self.thread.join(timeout=30)


def _status(stack):
    return (stack.infd(NAME) or {}).get("status") or {}


def _reasons(stack):
    return [e.get("reason") for e in stack.events(NAME)]


def _route_weights(stack):
    route = stack.get("gateway.networking.k8s.io/v1", "httproutes", NAME)
    return {r["name"][-1]: r.get("weight") for r in route["spec"]["rules"][0]["backendRefs"]}


def _condition(stack, ctype):
    return next((c["status"] for c in _status(stack).get("conditions") or [] if c["type"] == ctype), None)


def _story(stack) -> str:
    """The resource's events and status, for a failure message."""
    lines = [f"{e.get('type')} {e.get('reason')}: {e.get('message')}" for e in stack.events(NAME)]
    status = _status(stack)
    lines.append(f"phase {status.get('phase')}, weights {status.get('weights')}, cutback {status.get('cutback')}, "
                 f"last decision: {status.get('lastDecision')}")
    lines.append(f"engine capacity: {json.loads(status.get('engine') or '{}').get('capacity')}")
    return "\n".join(lines)


def test_incident_cutback_restart_and_prometheus_outage(tmp_path):
    settings = DemoSettings(step_seconds=2, cutback_interval_seconds=5, cutback_stable_seconds=6, startup_seconds=2.0)
    # FORESCALE_E2E_WORKDIR keeps the processes' logs somewhere that outlives pytest's tmp rotation.
    workdir = os.environ.get("FORESCALE_E2E_WORKDIR") or str(tmp_path)
    # A 10 s Lease (renewed every 2 s): the operator started after the kill below takes over in about 10 s, not
    # the default 30 s, and a holder still rides out a 4 s stall of this loaded machine.
    lease = {"FORESCALE_LEASE_SECONDS": "10", "FORESCALE_LEASE_RENEW_SECONDS": "2"}
    with DemoStack(StackSettings(startup_seconds=2.0, scrape_seconds=1.0, workdir=workdir, operator_env=lease)) as stack:
        stack.apply(demo_resource(settings, stack.settings.namespace))
        wait_until(lambda: len(stack.pod_urls(NAME, "a")) >= 2, 90, 1.0, "pool a's two pods")
        stack.start_gateway(NAME)
        with Load(stack.gateway_url, rate=14.0, seconds=300):
            wait_until(lambda: _condition(stack, "MetricsAvailable") == "True" and _status(stack).get("forecast"), 60, 1.0,
                       "metrics and a first forecast")
            assert "EmergencyStarted" not in _reasons(stack)
            # The error budget's reading, by the operator's own reader from this Prometheus: the servers'
            # histogram gives a share over the SLO (the stretch and the burn-rate trigger read it).
            spec = parse_spec(demo_resource(settings, stack.settings.namespace)["spec"])
            sample = make_metric_source(spec, stack.prometheus.url).sample(stack.settings.namespace, NAME, spec, time.time())
            assert sample.available and sample.over_slo_fraction is not None and 0.0 <= sample.over_slo_fraction < 0.5

            # The incident: every A server 2.5x slower for 40 s (through the fault API).
            for url in stack.pod_urls(NAME, "a"):
                stack.admin(url, "/admin/faults", {"slowdown": 2.5, "seconds": 40})
            wait_until(lambda: _status(stack).get("phase") == "Emergency", 60, 0.5, "phase Emergency")
            wait_until(lambda: _route_weights(stack) == {"a": 70, "b": 30}, 20, 0.5, "weights 70/30 on the route")
            # The route moves first; status follows at the end of the same tick, after the admin calls.
            wait_until(lambda: _status(stack)["pools"]["a"].get("runtimePrecision") == "int8", 30, 0.5, "runtime precision int8")
            snapshot = [c for c in stack.list("v1", "configmaps") if c["metadata"]["name"].startswith(f"{NAME}-incident-")]
            assert snapshot and "admin" not in json.dumps(snapshot).lower().replace("/admin/", "")
            assert stack.settings.admin_token not in json.dumps(snapshot)

            # Recovery, then kill the operator right after a cut-back step and start a new one.
            wait_until(lambda: "CutbackStep" in _reasons(stack), 150, 0.5, "the first cut-back step")
            stack.kill_operator()
            step, weights = _status(stack)["cutback"]["step"], _route_weights(stack)
            assert step >= 1 and weights["b"] < 30
            moves = sum(r in ("CutbackStep", "CutbackCompleted") for r in _reasons(stack))
            stack.start_operator()
            seen_b = []

            def moved_on():
                seen_b.append(_route_weights(stack)["b"])
                return sum(r in ("CutbackStep", "CutbackCompleted") for r in _reasons(stack)) > moves

            # Resumed, not restarted: the new operator's first move is the next step, and B never gets back
            # the emergency's share on the way (a restarted incident would shift 30% again).
            wait_until(moved_on, 60, 0.5, "the new operator's next cut-back move")
            assert max(seen_b) <= weights["b"], seen_b
            assert "CutbackCompleted" in _reasons(stack) or (_status(stack).get("cutback") or {}).get("step", 0) >= step
            assert _reasons(stack).count("EmergencyStarted") == 1
            try:
                wait_until(lambda: "CutbackCompleted" in _reasons(stack), 90, 0.5, "CutbackCompleted")
            except Exception as exc:
                raise AssertionError(f"{exc}\n{_story(stack)}") from None
            assert _route_weights(stack) == {"a": 100, "b": 0}
            reasons = _reasons(stack)
            order = [reasons.index(r) for r in ("EmergencyStarted", "TrafficShifted", "PrecisionDowngraded", "Recovered", "CutbackCompleted")]
            assert order == sorted(order), reasons
            assert "ScaledUp" in reasons
            wait_until(lambda: _status(stack)["pools"]["a"].get("runtimePrecision") == "fp16", 20, 0.5, "precision restored")

            # Prometheus goes away: the operator holds and says so once; it comes back by itself.
            stack.stop_prometheus()
            wait_until(lambda: _condition(stack, "MetricsAvailable") == "False", 30, 0.5, "MetricsAvailable=False")
            assert _status(stack)["phase"] == "Degraded"
            # Read once the operator holds: until its first tick without Prometheus it may still resize A.
            replicas = {p: stack.get("apps/v1", "deployments", f"{NAME}-{p}")["spec"]["replicas"] for p in "ab"}
            time.sleep(5)
            assert _reasons(stack).count("MetricsUnavailable") <= 2  # once at start-up at most, once now
            assert {p: stack.get("apps/v1", "deployments", f"{NAME}-{p}")["spec"]["replicas"] for p in "ab"} == replicas
            stack.start_prometheus()
            wait_until(lambda: _condition(stack, "MetricsAvailable") == "True", 60, 0.5, "MetricsAvailable=True again")
