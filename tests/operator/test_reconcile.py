"""reconcile() and tick() as plain functions against the emulated API (no kopf)."""

from __future__ import annotations

import copy

import pytest

from forescale_operator.actuators import Actuators
from forescale_operator.events import RecordingEvents
from forescale_operator.handlers.deps import HandlerDeps
from forescale_operator.handlers.reconcile import reconcile
from forescale_operator.forecast_loop.binding import Bindings
from forescale_operator.forecast_loop.loop import ForecastLoop
from forescale_operator.handlers.tick import TickContext, TickDeps, tick
from forescale_operator.kube.refs import INFERENCE_DEPLOYMENTS
from forescale_operator.readings.base import MetricSample, PoolSample


def deps_for(api, prometheus_url: str | None = "http://prom:9090") -> tuple[HandlerDeps, RecordingEvents]:
    """Handlers of an operator with FORESCALE_PROMETHEUS_URL set (None: unset), posting to a recorder."""
    events = RecordingEvents()
    return HandlerDeps(api=api, actuators=Actuators(api), events=events, prometheus_url=prometheus_url), events


def apply(cluster, body: dict) -> dict:
    return cluster.put(body)


def current(cluster, name="chat", namespace="default") -> dict:
    return cluster.get("inferencedeployments", namespace, name)


def child_names(cluster, namespace="default") -> dict[str, list[str]]:
    return {plural: sorted(o["metadata"]["name"] for o in cluster.objects(plural, namespace))
            for plural in ("deployments", "services", "httproutes", "virtualservices")}


async def test_create_makes_every_child_and_reports_with_numbers(cluster, api, example):
    deps, events = deps_for(api)
    await reconcile(apply(cluster, example()), deps)
    assert child_names(cluster) == {"deployments": ["chat-a", "chat-b"], "services": ["chat", "chat-a", "chat-b"],
                                    "httproutes": ["chat"], "virtualservices": []}
    assert events.events == [("Normal", "PoolsCreated",
                              "Created chat-a (2 replicas, fp16), chat-b (1 replica, int8), services chat-a, chat-b, "
                              "chat, route HTTPRoute chat weights 100/0")]
    deployment = cluster.get("deployments", "default", "chat-a")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}
    status = current(cluster)["status"]
    assert status["phase"] == "Stable" and status["weights"] == {"a": 100, "b": 0} and status["observedGeneration"] == 1
    assert status["pools"]["a"]["readyReplicas"] == 2 and status["pools"]["b"]["desiredReplicas"] == 1
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Ready": "True", "MetricsAvailable": "Unknown", "ForecastReady": "Unknown", "Emergency": "Unknown",
        "AdminReady": "False"}


async def test_a_second_run_changes_nothing_and_posts_nothing(cluster, api, example):
    deps, events = deps_for(api)
    await reconcile(apply(cluster, example()), deps)
    writes_before = [r for r in cluster.request_log if r.verb in ("create", "update", "patch", "delete")]
    await reconcile(current(cluster), deps)
    writes_after = [r for r in cluster.request_log if r.verb in ("create", "update", "patch", "delete")]
    assert len(events.events) == 1 and writes_after == writes_before


@pytest.mark.parametrize("before, after", [
    ("Emergency", "Emergency"),      # an incident outlives a restart: a tick's engine ends it, not readiness
    ("Recovering", "Recovering"),
    ("CuttingBack", "CuttingBack"),  # a new operator resuming a cut-back read Stable for a tick with B at 20%
    ("Scaling", "Stable"),           # readiness phases are readiness's: both pools have their pods
    ("Degraded", "Stable"),
])
async def test_a_restart_keeps_an_incidents_phase_and_refreshes_the_rest(cluster, api, example, before, after):
    deps, _ = deps_for(api)
    await reconcile(apply(cluster, example()), deps)
    await api.patch(INFERENCE_DEPLOYMENTS, "default", "chat", {"status": {"phase": before}}, subresource="status")
    await reconcile(current(cluster), deps)  # what kopf's resume handler calls after an operator restart
    assert current(cluster)["status"]["phase"] == after


async def test_replica_bounds_move_existing_replicas_into_range(cluster, api, example):
    deps, events = deps_for(api)
    await reconcile(apply(cluster, example()), deps)
    body = current(cluster)
    body["spec"]["pools"]["a"]["minReplicas"] = 4
    body["spec"]["pools"]["b"]["maxReplicas"] = 1
    await reconcile(apply(cluster, body), deps)
    assert cluster.get("deployments", "default", "chat-a")["spec"]["replicas"] == 4
    assert events.events[-1] == ("Normal", "ScaledUp", "Scaled chat-a 2 -> 4: outside the new bounds 4..10")


async def test_template_change_reaches_the_deployment(cluster, api, example):
    deps, events = deps_for(api)
    await reconcile(apply(cluster, example()), deps)
    body = current(cluster)
    container = body["spec"]["pools"]["b"]["template"]["spec"]["containers"][0]
    container["image"] = "ghcr.io/forescale/model-server:0.2.0"
    container["resources"] = {}
    await reconcile(apply(cluster, body), deps)
    live = cluster.get("deployments", "default", "chat-b")["spec"]["template"]["spec"]["containers"][0]
    assert live["image"].endswith(":0.2.0") and live["resources"] == {}  # removed fields are removed
    assert events.events[-1] == ("Normal", "PoolsUpdated",
                                 "Updated chat-b template (ghcr.io/forescale/model-server:0.2.0, int8, 1 replica)")


@pytest.mark.parametrize("new_router, plural", [("istio", "virtualservices"), ("none", None)])
async def test_router_change_moves_the_route(cluster, api, example, new_router, plural):
    deps, events = deps_for(api)
    await reconcile(apply(cluster, example()), deps)
    body = current(cluster)
    body["spec"]["traffic"]["router"] = new_router
    await reconcile(apply(cluster, body), deps)
    names = child_names(cluster)
    assert names["httproutes"] == [] and names["virtualservices"] == ([] if plural is None else ["chat"])
    assert "removed HTTPRoute chat" in events.events[-1][2]
    assert current(cluster)["status"]["weights"] == {"a": 100, "b": 0}


BAD_SPECS = [
    ("no containers", lambda s: s["pools"]["a"]["template"]["spec"].update(containers=[]),
     "spec.pools.a.template.spec.containers: must list at least one container"),
    ("no image", lambda s: s["pools"]["b"]["template"]["spec"]["containers"][0].pop("image"),
     "spec.pools.b.template.spec.containers[0].image: is required"),
    ("no pod spec", lambda s: s["pools"]["a"].update(template={"metadata": {}}),
     "spec.pools.a.template.spec: is required (a PodSpec with at least one container)"),
]


@pytest.mark.parametrize("what, breaks, message", BAD_SPECS, ids=[b[0] for b in BAD_SPECS])
async def test_invalid_spec_touches_nothing_and_recovers_when_fixed(cluster, api, example, what, breaks, message):
    deps, events = deps_for(api)
    body = example()
    good = copy.deepcopy(body)
    breaks(body["spec"])
    await reconcile(apply(cluster, body), deps)
    assert child_names(cluster) == {"deployments": [], "services": [], "httproutes": [], "virtualservices": []}
    status = current(cluster)["status"]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert status["phase"] == "Invalid" and ready["status"] == "False" and ready["reason"] == "InvalidSpec"
    assert message in ready["message"]
    assert events.events == [("Warning", "InvalidSpec", f"Invalid spec, no child changed: {message}")]
    await reconcile(current(cluster), deps)  # a retry or resume does not repeat the event
    assert len(events.events) == 1
    fixed = current(cluster)
    fixed["spec"] = good["spec"]
    await reconcile(apply(cluster, fixed), deps)
    assert current(cluster)["status"]["phase"] == "Stable"
    assert child_names(cluster)["deployments"] == ["chat-a", "chat-b"]
    assert events.reasons[-2:] == ["PoolsCreated", "PoolsUpdated"]


@pytest.mark.parametrize("router, plural, kind", [("gatewayapi", "httproutes", "HTTPRoute"),
                                                  ("istio", "virtualservices", "VirtualService")])
async def test_router_whose_api_is_not_served_is_invalid(cluster, api, example, router, plural, kind):
    cluster.set_served(plural, False)
    deps, events = deps_for(api)
    body = example()
    body["spec"]["traffic"]["router"] = router
    await reconcile(apply(cluster, body), deps)
    assert current(cluster)["status"]["phase"] == "Invalid"
    assert events.events[0][1] == "InvalidSpec" and f"spec.traffic.router: {router} needs {kind}" in events.events[0][2]
    assert child_names(cluster)["deployments"] == []
    # Installing the API recovers it on the next tick, without a spec change (Degraded: this tick has no metrics).
    cluster.set_served(plural, True)
    await tick(TickContext(current(cluster)), TickDeps(api=api, actuators=Actuators(api), events=events))
    assert current(cluster)["status"]["phase"] == "Degraded"


async def test_template_rejected_by_the_api_server_is_invalid(cluster, api, example):
    cluster.inject_faults(422, count=1, resource="deployments", verbs={"create"})
    deps, events = deps_for(api)
    await reconcile(apply(cluster, example()), deps)
    assert current(cluster)["status"]["phase"] == "Invalid"
    assert "the API server rejected a child" in events.events[0][2]


@pytest.mark.parametrize("status", [409, 429, 500, 503])
async def test_retryable_api_errors_propagate_for_kopf_to_retry(cluster, api, example, status):
    from forescale_operator.kube.errors import ApiError
    cluster.inject_faults(status, count=1, resource="services", verbs={"create"})
    deps, _ = deps_for(api)
    body = apply(cluster, example())
    with pytest.raises(ApiError) as raised:
        await reconcile(body, deps)
    assert raised.value.retryable and raised.value.status == status
    await reconcile(current(cluster), deps)  # the retry converges
    assert child_names(cluster)["services"] == ["chat", "chat-a", "chat-b"]


class ScriptedSource:
    """A metric source (readings/base.py) answering `sample`, or unavailable with `error`."""

    name = "scripted"

    def __init__(self, sample: PoolSample | None = None, error: str = "cannot reach Prometheus at http://prom:9090"):
        self.pool, self.error = sample, error

    def sample(self, namespace, name, spec, now):
        if self.pool is None:
            return MetricSample(time=now, available=False, error=self.error)
        return MetricSample(time=now, available=True, pools={"a": self.pool, "b": PoolSample(rate_rps=0.0)},
                            latency_ms=self.pool.latency_ms, rate_rps=self.pool.rate_rps)


def reading_deps(api, events, source) -> TickDeps:
    """A tick that reads `source` (as Prometheus) and forecasts nothing."""
    loop = ForecastLoop(bindings=Bindings(prometheus_url="http://prom:9090", build=lambda url: source))
    return TickDeps(api=api, actuators=Actuators(api), events=events, loop=loop)


async def test_a_spec_turned_invalid_leaves_no_incident_series_behind(cluster, api, example):
    """An Emergency left in the phase series of a resource gone Invalid would fire ForescaleEmergencyTooLong
    for a resource the operator no longer acts on."""
    deps = TickDeps(api=api, actuators=Actuators(api), events=RecordingEvents())
    await reconcile(apply(cluster, example()), deps)
    deps.telemetry.record_phase("default", "chat", "Emergency", 1000.0)
    body = current(cluster)
    BAD_SPECS[0][1](body["spec"])
    await reconcile(apply(cluster, body), deps)
    series = deps.telemetry.registry.get_sample_value
    resource = {"namespace": "default", "name": "chat"}
    assert series("forescale_operator_phase", {**resource, "phase": "Invalid"}) == 1.0
    assert series("forescale_operator_phase", {**resource, "phase": "Emergency"}) == 0.0
    assert series("forescale_operator_phase_since_seconds", resource) > 1000.0


async def test_tick_keeps_status_true(cluster, api, example):
    deps, events = deps_for(api)
    await reconcile(apply(cluster, example()), deps)
    cluster.put({**cluster.get("deployments", "default", "chat-a"), "status": {"replicas": 2, "readyReplicas": 1}})
    summary = await tick(TickContext(current(cluster)), TickDeps(api=api, actuators=Actuators(api), events=events))
    status = current(cluster)["status"]
    assert status["phase"] == "Degraded" and status["pools"]["a"]["summary"] == "1/2"  # no metric source here
    assert "a 1/2 ready" in summary


def metrics_condition(cluster) -> tuple[str, str, str]:
    condition = next(c for c in current(cluster)["status"]["conditions"] if c["type"] == "MetricsAvailable")
    return condition["status"], condition["reason"], condition["message"]


async def test_tick_without_a_metric_source_is_degraded_and_warns_once(cluster, api, example):
    deps, events = deps_for(api, prometheus_url=None)
    await reconcile(apply(cluster, example()), deps)
    assert current(cluster)["status"]["phase"] == "Degraded"  # from the first status write, not the first tick
    ticking = TickDeps(api=api, actuators=Actuators(api), events=events)
    for _ in range(3):
        await tick(TickContext(current(cluster)), ticking)
    assert metrics_condition(cluster) == ("Unknown", "NoMetricSource", "no metric source is configured")
    # ...and in its series: ForescaleMetricsUnavailable fires on them, the dashboard's pickers list it
    series = ticking.telemetry.registry.get_sample_value
    resource = {"namespace": "default", "name": "chat"}
    assert series("forescale_operator_metrics_available", resource) == 0.0
    assert series("forescale_operator_phase", {**resource, "phase": "Degraded"}) == 1.0
    assert series("forescale_operator_ready_replicas", {**resource, "pool": "a"}) == 2.0
    assert current(cluster)["status"]["phase"] == "Degraded" and "lastDecision" not in current(cluster)["status"]
    assert events.reasons == ["PoolsCreated", "MetricsUnavailable"]
    kind, _, message = events.events[1]
    assert kind == "Warning" and "FORESCALE_PROMETHEUS_URL" in message and "spec.metrics.prometheusUrl" in message
    # a restarted operator (fresh memory) reads from status that it was said already
    restarted = RecordingEvents()
    await tick(TickContext(current(cluster)), TickDeps(api=api, actuators=Actuators(api), events=restarted))
    assert restarted.events == []


async def test_a_metric_source_in_the_spec_alone_is_enough(cluster, api, example):
    deps, events = deps_for(api, prometheus_url=None)
    body = example()
    body["spec"].setdefault("metrics", {})["prometheusUrl"] = "http://prom.monitoring:9090"
    await reconcile(apply(cluster, body), deps)
    assert current(cluster)["status"]["phase"] == "Stable"


async def test_tick_while_pool_a_has_no_ready_pod_is_pending_without_metrics(cluster, api, example):
    deps, events = deps_for(api, prometheus_url=None)
    await reconcile(apply(cluster, example()), deps)
    cluster.put({**cluster.get("deployments", "default", "chat-a"), "status": {"replicas": 2, "readyReplicas": 0}})
    await tick(TickContext(current(cluster)), TickDeps(api=api, actuators=Actuators(api), events=events))
    assert current(cluster)["status"]["phase"] == "Pending"


@pytest.mark.parametrize("value", ["abc", "-5", "1e-320", "nan"])
async def test_a_bad_capacity_annotation_is_a_warning_once_per_value(cluster, api, example, value):
    deps, events = deps_for(api)
    body = example()
    body["metadata"]["annotations"] = {"forescale.io/capacity-rps": value}
    await reconcile(apply(cluster, body), deps)
    source = ScriptedSource(PoolSample(latency_ms=120.0, rate_rps=10.0))
    tick_deps = reading_deps(api, events, source)
    for _ in range(3):
        await tick(TickContext(current(cluster)), tick_deps)
    warnings = [e for e in events.events if e[1] == "AnnotationIgnored"]
    assert len(warnings) == 1 and warnings[0][0] == "Warning"
    assert "forescale.io/capacity-rps" in warnings[0][2] and repr(value) in warnings[0][2]
    # another bad value is said again; a good one is silent, and a bad one after it is new again
    for annotation, said in (("xyz", 2), ("22", 2), (value, 3)):
        body = current(cluster)
        body["metadata"]["annotations"] = {"forescale.io/capacity-rps": annotation}
        apply(cluster, body)
        await tick(TickContext(current(cluster)), tick_deps)
        await tick(TickContext(current(cluster)), tick_deps)
        assert events.reasons.count("AnnotationIgnored") == said, annotation


async def test_tick_without_metrics_posts_metrics_unavailable_once(cluster, api, example):
    deps, events = deps_for(api)
    await reconcile(apply(cluster, example()), deps)
    tick_deps = reading_deps(api, events, ScriptedSource(None, error="cannot reach Prometheus at http://prom:9090"))
    await tick(TickContext(current(cluster)), tick_deps)
    await tick(TickContext(current(cluster)), tick_deps)
    assert events.reasons.count("MetricsUnavailable") == 1
    assert metrics_condition(cluster) == ("False", "MetricsUnavailable",
                                          "cannot reach Prometheus at http://prom:9090; replicas held")
    assert current(cluster)["status"]["phase"] == "Degraded"


async def test_tick_hands_the_reading_and_the_children_to_the_engine(cluster, api, example):
    deps, events = deps_for(api)
    await reconcile(apply(cluster, example()), deps)
    tick_deps = reading_deps(api, events, ScriptedSource(PoolSample(latency_ms=120.0, rate_rps=10.0)))
    await tick(TickContext(current(cluster)), tick_deps)
    status = current(cluster)["status"]
    # the engine saw both pools' ready replicas (the children) and the p99 (the reading); no forecast was made
    assert status["lastDecision"].startswith("Stable: a 2 (2 ready, fp16) 100%, b 1 (1 ready) 0%")
    assert "p99 120 ms / SLO 200 ms" in status["lastDecision"]
    assert metrics_condition(cluster) == ("True", "MetricsRead", "latency and rate read")
    ready = next(c for c in status["conditions"] if c["type"] == "ForecastReady")
    assert (ready["status"], ready["reason"]) == ("False", "NoForecast")


@pytest.mark.parametrize("plural, name", [("deployments", "chat-b"), ("httproutes", "chat")])
async def test_tick_puts_back_a_child_deleted_behind_its_back(cluster, api, example, plural, name):
    deps, events = deps_for(api)
    await reconcile(apply(cluster, example()), deps)
    cluster.delete(plural, "default", name)
    await tick(TickContext(current(cluster)), TickDeps(api=api, actuators=Actuators(api), events=events))
    assert cluster.get(plural, "default", name) is not None
    if plural == "deployments":
        assert events.events[-1] == ("Normal", "PoolsCreated",
                                     "Created chat-b (1 replica, int8), services unchanged, route HTTPRoute chat weights 100/0")
    else:
        assert events.events[-1] == ("Normal", "PoolsUpdated", "Updated recreated route HTTPRoute chat weights 100/0")


async def test_no_rbac_for_the_other_routers_kind_does_not_block(cluster, api, example):
    cluster.inject_faults(403, count=5, resource="virtualservices")
    deps, events = deps_for(api)
    await reconcile(apply(cluster, example()), deps)
    assert child_names(cluster)["httproutes"] == ["chat"] and events.reasons == ["PoolsCreated"]


async def test_defaults_a_real_server_fills_in_cause_no_rewrite(cluster, api, example):
    deps, events = deps_for(api)
    await reconcile(apply(cluster, example()), deps)
    # What kube-apiserver and the Gateway API CRD would add to what the operator sent.
    live = cluster.get("deployments", "default", "chat-a")
    container = live["spec"]["template"]["spec"]["containers"][0]
    container.update(imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log")
    container["resources"]["limits"]["nvidia.com/gpu"] = "1"
    live["spec"]["template"]["spec"].update(restartPolicy="Always", dnsPolicy="ClusterFirst")
    cluster.put(live)
    route = cluster.get("httproutes", "default", "chat")
    for ref in route["spec"]["rules"][0]["backendRefs"]:
        ref.update(group="", kind="Service")
    route["spec"]["rules"][0]["matches"] = [{"path": {"type": "PathPrefix", "value": "/"}}]
    cluster.put(route)
    writes_before = [r for r in cluster.request_log if r.verb in ("create", "update", "patch", "delete")]
    await reconcile(current(cluster), deps)
    writes_after = [r for r in cluster.request_log if r.verb in ("create", "update", "patch", "delete")]
    assert writes_after == writes_before and events.reasons == ["PoolsCreated"]


async def test_with_an_admin_token_secret_both_pools_get_the_token(cluster, api, example):
    events = RecordingEvents()
    deps = HandlerDeps(api=api, actuators=Actuators(api, ("forescale-admin", "token")), events=events)
    await reconcile(apply(cluster, example()), deps)
    for pool in ("a", "b"):
        pod = cluster.get("deployments", "default", f"chat-{pool}")["spec"]["template"]["spec"]
        env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
        assert env["FORESCALE_ADMIN_TOKEN_FILE"] == "/var/run/forescale/token"
        assert pod["volumes"][-1]["projected"]["sources"][0]["secret"]["name"] == "forescale-admin"
