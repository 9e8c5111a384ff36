"""The forecast loop over the emulated API: readings -> forecast -> engine -> actuators -> status and events.

No kopf and no Prometheus here: a scripted metric source stands in for
Prometheus, a baseline stands in for the LSTM, and ticks are driven by hand
with a fake clock. The real pieces (HTTP API, actuators, engine, status,
events) run as in the operator. tests/e2e runs the whole stack for real.
"""

from __future__ import annotations

import asyncio
import copy
import json

import pytest
from prometheus_client import REGISTRY

from forescale_operator.actuators import Actuators
from forescale_operator.children import Owner
from forescale_operator.events import RecordingEvents
from forescale_operator.forecast_loop.binding import Bindings
from forescale_operator.forecasting.forecaster import PredictorForecastSource
from forescale_operator.forecast_loop.loop import ForecastLoop
from forescale_operator.handlers.deps import HandlerDeps
from forescale_operator.handlers.reconcile import reconcile
from forescale_operator.handlers.tick import STATUS_REFRESH_STEPS, TickContext, TickDeps, tick
from forescale_operator.readings.base import MetricSample, PoolSample
from forescale_operator.kube.timestamps import epoch_seconds
from forescale_operator.telemetry import OperatorMetrics
from forescale_predictor import make_baseline


class Clock:
    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class ScriptedSource:
    """Answers like Prometheus would, from the current `latency_ms` / `rate` / `up` values."""

    name = "scripted"

    def __init__(self) -> None:
        self.latency_ms, self.rate, self.up = 60.0, 40.0, True

    def sample(self, namespace, name, spec, now):
        if not self.up:
            return MetricSample(time=now, available=False, error="cannot reach Prometheus at http://prom:9090: connection refused")
        pool = PoolSample(latency_ms=self.latency_ms, rate_rps=self.rate, error_rate=0.0, queue_depth=0.0, agreement=0.99)
        return MetricSample(time=now, available=True, pools={"a": pool, "b": PoolSample(latency_ms=30.0, rate_rps=0.0, agreement=0.99)},
                            latency_ms=self.latency_ms, rate_rps=self.rate)


def _spec_body(example, **cutback):
    body = example("minimal")
    body["spec"]["forecast"] = {"stepSeconds": 5}
    body["spec"]["traffic"]["cutback"] = {"stepPercent": 10, "intervalSeconds": 5, "stableSeconds": 10, **cutback}
    body["spec"]["pools"]["b"]["maxReplicas"] = 10
    return body


def _loop(clock, source, telemetry=None, monotonic=None) -> ForecastLoop:
    """The operator's loop with a scripted Prometheus and the `last` baseline for the LSTM."""
    return ForecastLoop(
        bindings=Bindings(prometheus_url="http://prom:9090", build=lambda url: source),
        forecasts=PredictorForecastSource(loader=lambda _: make_baseline("last", step_seconds=5, horizon_seconds=30)),
        telemetry=telemetry if telemetry is not None else OperatorMetrics(), clock=clock, monotonic=monotonic,
    )


@pytest.fixture
def loop(cluster, api):
    clock = Clock()
    source = ScriptedSource()
    events = RecordingEvents()
    telemetry = OperatorMetrics()
    deps = TickDeps(api=api, actuators=Actuators(api), events=events, loop=_loop(clock, source, telemetry))

    async def run(seconds: float = 5.0):
        clock.t += seconds
        body = cluster.get("inferencedeployments", "default", "chat")
        return await tick(TickContext(copy.deepcopy(body)), deps)

    return run, source, events, clock, telemetry


def _status(cluster):
    return cluster.get("inferencedeployments", "default", "chat")["status"]


def _weights(cluster):
    route = cluster.get("httproutes", "default", "chat")
    refs = route["spec"]["rules"][0]["backendRefs"]
    return {r["name"][-1]: r.get("weight") for r in refs}


async def test_incident_shift_recover_and_cut_back_to_100_0(cluster, api, example, loop):
    run, source, events, clock, telemetry = loop
    await reconcile(cluster.put(_spec_body(example)), HandlerDeps(api=api, actuators=Actuators(api), events=events))
    for _ in range(4):
        await run()
    assert _status(cluster)["phase"] in ("Stable", "Scaling")
    assert _weights(cluster) == {"a": 100, "b": 0}

    source.latency_ms = 450.0  # > 2.0 x SLO 200 ms
    for _ in range(2):
        await run()
    status = _status(cluster)
    assert status["phase"] == "Emergency"
    assert _weights(cluster) == {"a": 70, "b": 30}
    assert status["pools"]["a"]["runtimePrecision"] == "int8"
    assert "EmergencyStarted" in events.reasons and "TrafficShifted" in events.reasons
    # the first ticks may have shifted for an overload (2 pods at start for 40 rps) and back: the incident's shift follows its start
    started = events.reasons.index("EmergencyStarted")
    shift = next(m for _, r, m in events.events[started:] if r == "TrafficShifted")
    assert "30%" in shift and "chat-b" in shift
    snapshots = [c for c in cluster.objects("configmaps", "default") if c["metadata"]["name"].startswith("chat-incident-")]
    assert len(snapshots) == 1 and json.loads(snapshots[0]["data"]["scene.json"])["resource"] == "default/chat"
    engine = json.loads(status["engine"])
    assert engine["incident"]["stage"] == "Emergency"
    # the alerts' clock: since when the phase holds, as status has it (ForescaleEmergencyTooLong)
    resource = {"namespace": "default", "name": "chat"}
    assert telemetry.registry.get_sample_value("forescale_operator_phase_since_seconds", resource) == \
        epoch_seconds(status["lastTransitionTime"])

    source.latency_ms = 60.0
    for _ in range(40):
        await run()
        if "CutbackCompleted" in events.reasons:
            break
    reasons = events.reasons
    order = [reasons.index("EmergencyStarted"), reasons.index("TrafficShifted", started), reasons.index("Recovered"),
             reasons.index("CutbackCompleted")]
    assert order == sorted(order)
    assert reasons.count("CutbackStep") >= 2
    assert _weights(cluster) == {"a": 100, "b": 0}
    status = _status(cluster)
    assert status["pools"]["a"]["runtimePrecision"] == "fp16"
    assert "PrecisionRestored" in reasons
    text = telemetry.registry.get_sample_value("forescale_operator_weight_percent", {"namespace": "default", "name": "chat", "pool": "b"})
    assert text == 0.0
    # ForescaleForecastErrorHigh's series: the forecasts' scored error
    assert telemetry.registry.get_sample_value("forescale_operator_forecast_error_ms", resource) is not None


async def test_cutback_resumes_at_the_same_step_after_a_restart(cluster, api, example, loop):
    run, source, events, clock, _ = loop
    await reconcile(cluster.put(_spec_body(example, intervalSeconds=10)), HandlerDeps(api=api, actuators=Actuators(api), events=events))
    for _ in range(3):
        await run()
    source.latency_ms = 450.0
    await run()
    await run()
    source.latency_ms = 60.0
    while "CutbackStep" not in events.reasons:
        await run()
    step_before = _status(cluster)["cutback"]["step"]
    weights_before = _weights(cluster)

    # A new operator process: fresh in-memory seams, same status in the API.
    fresh_events = RecordingEvents()
    deps = TickDeps(api=api, actuators=Actuators(api), events=fresh_events, loop=_loop(clock, source))
    clock.t += 1
    await tick(TickContext(copy.deepcopy(cluster.get("inferencedeployments", "default", "chat"))), deps)
    assert _status(cluster)["cutback"]["step"] == step_before
    assert _weights(cluster) == weights_before
    assert "EmergencyStarted" not in fresh_events.reasons  # it resumed, it did not start over


async def test_prometheus_down_holds_replicas_and_recovers(cluster, api, example, loop):
    run, source, events, clock, _ = loop
    await reconcile(cluster.put(_spec_body(example)), HandlerDeps(api=api, actuators=Actuators(api), events=events))
    for _ in range(3):
        await run()
    replicas = {p: cluster.get("deployments", "default", f"chat-{p}")["spec"]["replicas"] for p in "ab"}
    source.up = False
    for _ in range(3):
        await run()
    status = _status(cluster)
    assert status["phase"] == "Degraded"
    assert {c["type"]: c["status"] for c in status["conditions"]}["MetricsAvailable"] == "False"
    assert events.reasons.count("MetricsUnavailable") == 1
    assert {p: cluster.get("deployments", "default", f"chat-{p}")["spec"]["replicas"] for p in "ab"} == replicas
    source.up = True
    for _ in range(2):
        await run()
    status = _status(cluster)
    assert status["phase"] != "Degraded"
    assert {c["type"]: c["status"] for c in status["conditions"]}["MetricsAvailable"] == "True"


async def test_preview_reports_would_and_acts_on_nothing(cluster, api, example, loop):
    run, source, events, clock, _ = loop
    body = _spec_body(example)
    body["spec"]["mode"] = "Preview"
    await reconcile(cluster.put(body), HandlerDeps(api=api, actuators=Actuators(api), events=events))
    for _ in range(3):
        await run()
    source.latency_ms, source.rate = 450.0, 400.0
    for _ in range(3):
        await run()
    assert _weights(cluster) == {"a": 100, "b": 0}
    assert cluster.get("deployments", "default", "chat-a")["spec"]["replicas"] == 2
    loop_events = [m for _, r, m in events.events if r != "PoolsCreated"]
    assert loop_events and all(m.startswith("Preview: would") for m in loop_events)
    assert _status(cluster)["lastDecision"].startswith("Preview: would")
    assert not [c for c in cluster.objects("configmaps", "default") if c["metadata"]["name"].startswith("chat-incident-")]


async def test_forgetting_a_deleted_resource_drops_its_history_and_series(cluster, api, example, loop):
    run, source, events, clock, telemetry = loop
    await reconcile(cluster.put(_spec_body(example)), HandlerDeps(api=api, actuators=Actuators(api), events=events))
    forecast_loop = _loop(clock, source, telemetry)
    deps = TickDeps(api=api, actuators=Actuators(api), events=events, loop=forecast_loop)
    body = copy.deepcopy(cluster.get("inferencedeployments", "default", "chat"))
    source.rate = 10.0  # within the 2 starting pods: no overload shift, all traffic on A
    await tick(TickContext(body), deps)
    owner = TickContext(body).owner
    labels = {"namespace": "default", "name": "chat", "pool": "a"}
    assert telemetry.registry.get_sample_value("forescale_operator_weight_percent", labels) == 100.0
    assert len(forecast_loop.memories[owner.uid].history) == 1
    assert owner.uid in forecast_loop.forecasts.sources and owner.uid in forecast_loop.forecasts.seconds
    bound = forecast_loop.bindings.bind(body, api)
    assert forecast_loop.bindings.bind(body, api) is bound  # held for this generation
    forecast_loop.forget(owner)  # the one call registration makes when the resource is deleted
    assert telemetry.registry.get_sample_value("forescale_operator_weight_percent", labels) is None
    assert owner.uid not in forecast_loop.memories
    assert owner.uid not in forecast_loop.forecasts.sources and owner.uid not in forecast_loop.forecasts.seconds
    assert forecast_loop.bindings.bind(body, api) is not bound


async def test_the_delete_handlers_hold_waits_for_a_tick_and_leaves_no_memory_behind():
    """The daemon forgets a deleted resource when it stops; the delete handler's hold came after it and made
    the memory anew (its lock), which nothing dropped. `releasing` waits for a tick in flight and forgets."""
    forecast_loop, owner = ForecastLoop(), Owner(namespace="default", name="chat", uid="u-1")
    order: list[str] = []

    async def tick_in_flight():
        async with forecast_loop.acting(owner):
            order.append("tick starts")
            await asyncio.sleep(0.05)
            order.append("tick ends")

    async def delete_handler():
        await asyncio.sleep(0.01)
        async with forecast_loop.releasing(owner):
            order.append("released")

    await asyncio.gather(tick_in_flight(), delete_handler())
    assert order == ["tick starts", "tick ends", "released"]
    assert owner.uid not in forecast_loop.memories
    forecast_loop.forget(owner)  # the daemon's own forget, after: nothing left to drop, nothing made anew
    async with forecast_loop.releasing(owner):  # a retry of the handler after both
        pass
    assert owner.uid not in forecast_loop.memories


@pytest.mark.parametrize(
    "annotation, per_pod, warning",
    [
        pytest.param(None, 10.0, None, id="absent-default-fallback"),
        pytest.param("5", 5.0, None, id="load-tested-capacity"),
        pytest.param(" 22.5 ", 22.5, None, id="spaces-allowed"),
        pytest.param("fast", 10.0, "annotation forescale.io/capacity-rps: must be a positive number", id="not-a-number"),
        pytest.param("-2", 10.0, "got '-2'", id="negative"),
        pytest.param("inf", 10.0, "got 'inf'", id="infinite"),
    ],
)
async def test_the_capacity_annotation_reaches_the_engine(cluster, api, example, loop, caplog, annotation, per_pod, warning):
    run, source, events, clock, telemetry = loop
    body = _spec_body(example)
    if annotation is not None:
        body["metadata"].setdefault("annotations", {})["forescale.io/capacity-rps"] = annotation
    await reconcile(cluster.put(body), HandlerDeps(api=api, actuators=Actuators(api), events=events))
    source.rate = 2.0  # 1 rps per pod: far under any capacity, so the estimate is the configured one
    with caplog.at_level("WARNING"):
        for _ in range(3):
            await run()
    engine = json.loads(_status(cluster)["engine"])
    # the latency model's prior goes through the load-tested point (the annotation's rate at the target)
    assert engine["learned"]["models"]["a"]["priorRps"] == pytest.approx(per_pod)
    problems = [r.getMessage() for r in caplog.records if "forescale.io/capacity-rps" in r.getMessage()]
    if warning is None:
        assert problems == []
    else:
        assert len(problems) == 1 and warning in problems[0]  # logged once, not at every tick


async def test_status_shows_each_pools_fitted_latency_model(cluster, api, example, loop):
    run, source, events, clock, _ = loop
    await reconcile(cluster.put(_spec_body(example)), HandlerDeps(api=api, actuators=Actuators(api), events=events))
    source.rate = 10.0
    for _ in range(2 + STATUS_REFRESH_STEPS):  # the fitted model is refreshed, not written every tick
        await run()
    model = _status(cluster)["pools"]["a"]["model"]
    assert set(model) == {"l0Ms", "muRps", "capacityRps", "health", "samples", "outliers", "priorRps", "provenRps",
                          "stretch"}
    assert set(_status(cluster)["pools"]["b"]["model"]) == set(model) - {"stretch"}  # A's alone
    assert model["stretch"] >= 1.0
    assert model["samples"] >= 1 and model["priorRps"] == pytest.approx(10.0)  # the default capacity is the prior
    assert 0 < model["l0Ms"] < 200 and model["capacityRps"] > 0 and model["health"] >= 1.0


async def test_a_generation_that_changes_mid_tick_is_picked_up_by_the_next_tick(cluster, api, example, loop):
    """The tick finishes on the binding it started with; the next one rebinds."""
    run, source, events, clock, _ = loop
    await reconcile(cluster.put(_spec_body(example)), HandlerDeps(api=api, actuators=Actuators(api), events=events))
    await run()
    before = cluster.get("inferencedeployments", "default", "chat")["metadata"]["generation"]
    sample = source.sample

    def sample_while_the_slo_changes(namespace, name, spec, now):
        """Prometheus answers while someone applies a new SLO: the resource's generation moves mid-tick."""
        source.sample = sample
        body = cluster.get("inferencedeployments", "default", "chat")
        body["metadata"].pop("resourceVersion", None)
        body["spec"]["slo"]["targetLatencyMs"] = 1000
        cluster.put(body)
        return sample(namespace, name, spec, now)

    source.sample = sample_while_the_slo_changes
    await run()
    assert cluster.get("inferencedeployments", "default", "chat")["metadata"]["generation"] == before + 1
    assert "/ SLO 200 ms" in _status(cluster)["lastDecision"]  # decided on the spec the tick started with
    await run()
    assert "/ SLO 1000 ms" in _status(cluster)["lastDecision"]  # the next tick bound the new generation


TICK_STEPS = ("load", "observe", "admin", "read", "pods", "forecast", "decide", "write_ahead", "act", "report")


async def test_a_tick_records_the_wall_time_of_each_of_its_steps(cluster, api, example, loop):
    """forescale_operator_tick_step_seconds says where a late tick waited (docs/operator-scale.md): every step of a
    full tick is counted once, in the driver's order."""
    def counts():
        return {s: REGISTRY.get_sample_value("forescale_operator_tick_step_seconds_count", {"step": s}) or 0.0
                for s in TICK_STEPS}

    run, *_ = loop
    await reconcile(cluster.put(_spec_body(example)), HandlerDeps(api=api, actuators=Actuators(api), events=RecordingEvents()))
    await run()  # the first tick may converge; the second is a full one
    before = counts()
    await run()
    after = counts()
    assert {s: after[s] - before[s] for s in TICK_STEPS} == {s: 1.0 for s in TICK_STEPS}


class CountingApi:
    """The emulated API, counting the status PATCHes the ticks make."""

    def __init__(self, api) -> None:
        self._api, self.status_patches = api, 0

    def __getattr__(self, name):
        return getattr(self._api, name)

    async def patch(self, resource, namespace, name, body, subresource=None, **kwargs):
        if subresource == "status":
            self.status_patches += 1
        return await self._api.patch(resource, namespace, name, body, subresource=subresource, **kwargs)


@pytest.mark.parametrize("wall_jump", [
    0.0,
    -3600.0,  # the wall clock set back an hour: the refresh runs on the monotonic clock, so it keeps its pace
])
async def test_a_steady_resource_writes_status_every_few_steps_and_learns_in_between(cluster, api, example, wall_jump):
    """Learned state and forecasts are refreshed every STATUS_REFRESH_STEPS steps; the engine keeps learning from
    memory in between, so what status shows after a refresh is every tick's learning, not the last write's."""
    clock, mono, source, counting = Clock(), Clock(), ScriptedSource(), CountingApi(api)
    deps = TickDeps(api=counting, actuators=Actuators(api), events=RecordingEvents(),
                    loop=_loop(clock, source, monotonic=mono))
    await reconcile(cluster.put(_spec_body(example)), HandlerDeps(api=api, actuators=Actuators(api), events=deps.events))
    source.rate = 10.0

    async def run():
        clock.t += 5.0
        mono.t += 5.0
        await tick(TickContext(copy.deepcopy(cluster.get("inferencedeployments", "default", "chat"))), deps)

    for _ in range(8):  # settle: the first values of every field are written at once
        await run()
    clock.t += wall_jump
    await run()  # the jump's own tick may write (the engine moves its times), and starts the count afresh
    for _ in range(STATUS_REFRESH_STEPS):
        await run()
    counting.status_patches = 0
    samples_before = _status(cluster)["pools"]["a"]["model"]["samples"]
    ticks = 4 * STATUS_REFRESH_STEPS
    for _ in range(ticks):
        await run()
    assert counting.status_patches == ticks // STATUS_REFRESH_STEPS
    # every tick learned (a sample each), though status was written once in four
    assert _status(cluster)["pools"]["a"]["model"]["samples"] >= samples_before + ticks - STATUS_REFRESH_STEPS


async def test_a_pressing_change_is_written_on_its_tick(cluster, api, example, loop):
    """An incident is never deferred: the tick that starts it writes phase, weights and the engine's incident."""
    run, source, events, clock, _ = loop
    await reconcile(cluster.put(_spec_body(example)), HandlerDeps(api=api, actuators=Actuators(api), events=events))
    for _ in range(6):
        await run()
    source.latency_ms = 450.0
    while "EmergencyStarted" not in events.reasons:
        await run()
    status = _status(cluster)
    assert status["phase"] == "Emergency" and status["weights"] == {"a": 70, "b": 30}
    assert json.loads(status["engine"])["incident"]["stage"] == "Emergency"


async def test_status_changed_under_the_kept_state_is_read_back(cluster, api, example, loop):
    """Another replica (or a hand edit) wrote status.engine since this operator kept its state: status wins."""
    run, source, events, clock, _ = loop
    await reconcile(cluster.put(_spec_body(example)), HandlerDeps(api=api, actuators=Actuators(api), events=events))
    for _ in range(6):
        await run()
    body = cluster.get("inferencedeployments", "default", "chat")
    engine = json.loads(body["status"]["engine"])
    engine["learned"]["models"]["a"]["priorRps"] = 77.0  # what the other writer learned
    body["status"]["engine"] = json.dumps(engine, sort_keys=True, separators=(",", ":"))
    cluster.put(body)
    for _ in range(1 + STATUS_REFRESH_STEPS):
        await run()
    assert json.loads(_status(cluster)["engine"])["learned"]["models"]["a"]["priorRps"] == pytest.approx(77.0)


async def test_a_move_to_scaling_written_at_the_refresh_says_when_it_happened(cluster, api, example, loop):
    """Stable <-> Scaling waits for the refresh; status and forescale_operator_phase_since_seconds say when the
    phase moved (the tick's clock then), not when status was written, and the gauge holds still meanwhile."""
    run, source, events, clock, telemetry = loop
    await reconcile(cluster.put(_spec_body(example)), HandlerDeps(api=api, actuators=Actuators(api), events=events))
    source.rate = 3.0  # light: a pod short is no overload (that would shift weights, a pressing change)
    for _ in range(2 * STATUS_REFRESH_STEPS):
        await run()
    version = cluster.get("inferencedeployments", "default", "chat")["metadata"]["resourceVersion"]
    while cluster.get("inferencedeployments", "default", "chat")["metadata"]["resourceVersion"] == version:
        await run()  # to a refresh: the move below is then a whole refresh from the next write
    assert _status(cluster)["phase"] == "Stable"
    deployment = cluster.get("deployments", "default", "chat-a")
    replicas = deployment["spec"]["replicas"]
    resource = {"namespace": "default", "name": "chat"}
    since = []
    for _ in range(STATUS_REFRESH_STEPS + 1):
        # a pod of A restarting: one fewer ready than asked for, tick after tick
        cluster.put({**cluster.get("deployments", "default", "chat-a"),
                     "status": {"replicas": replicas, "readyReplicas": replicas - 1}})
        await run()
        since.append(telemetry.registry.get_sample_value("forescale_operator_phase_since_seconds", resource))
    status = _status(cluster)
    assert status["phase"] == "Scaling"
    assert len(set(since)) == 1 and since[0] > clock.t - (STATUS_REFRESH_STEPS + 1) * 5.0
    assert epoch_seconds(status["lastTransitionTime"]) == since[0]
