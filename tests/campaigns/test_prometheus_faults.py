"""Fault campaign, Prometheus side: down, slow, NaN, empty and garbage answers, while Stable and during an incident.

The real metric path runs (`PrometheusMetricSource` -> `PrometheusSource` ->
prometheus-api-client -> HTTP) against `FakePrometheus`. Expected behaviour
for every fault: **hold** — no replica or weight change, no incident started
or ended by missing data, the outage said once (phase Degraded,
MetricsAvailable False naming the problem) — then **resume** by itself when
answers come back.
"""

from __future__ import annotations

import pytest

from fake_prometheus import FakePrometheus
from forescale_operator.readings.prometheus import PrometheusMetricSource
from loop_rig import LoopRig, spec_body

#: fault mode -> words the MetricsAvailable message must contain (None: the answer parses, values are unknown)
FAULTS = {
    "down": "cannot reach",
    "slow": "did not answer",
    "empty": "no sample",
    "garbage": "unreadable answer",
    "wrong-shape": "unexpected result type",
    "not-a-number": "not a number",
    "two-series": "2 series",
    "http-500": "rejected the query",
    "nan": None,
    # Issue 19, defect 11: a negative reading is as unknown as NaN (it was read as "no traffic").
    "negative": None,
    "negative-rate": None,
}


@pytest.fixture
def prometheus():
    fake = FakePrometheus().start()
    # The client's timeout (below) leaves a loaded CI machine room for healthy answers (a few ms each, served
    # by a thread of this process); the slow fault outlasts it twice over.
    fake.slow_seconds = 2.0
    yield fake
    fake.stop()


def _set_fault(fake: FakePrometheus, mode: str) -> None:
    if mode == "down":
        fake.stop()
    else:
        fake.mode = mode


def _clear_fault(fake: FakePrometheus, mode: str) -> None:
    if mode == "down":
        fake.start()
    fake.mode = "ok"


async def _rig(cluster, api, example, fake) -> LoopRig:
    rig = LoopRig(cluster, api, PrometheusMetricSource(fake.url, timeout=1.0))
    await rig.create(spec_body(example))
    for _ in range(4):
        await rig.tick()
    return rig


@pytest.mark.parametrize("mode", list(FAULTS))
async def test_stable_service_holds_through_a_prometheus_fault_and_resumes(cluster, api, example, prometheus, tally, mode):
    with tally.attempt(f"prometheus {mode} (stable)"):
        await _stable_case(cluster, api, example, prometheus, mode)


async def _stable_case(cluster, api, example, prometheus, mode):
    rig = await _rig(cluster, api, example, prometheus)
    assert rig.phase() == "Stable" and rig.condition("MetricsAvailable") == "True"
    replicas, weights = rig.replicas(), rig.weights()

    _set_fault(prometheus, mode)
    for _ in range(3):
        await rig.tick()
    assert rig.replicas() == replicas and rig.weights() == weights  # hold
    assert "EmergencyStarted" not in rig.reasons
    words = FAULTS[mode]
    if words is not None:
        status = rig.status()
        assert status["phase"] == "Degraded"
        message = next(c["message"] for c in status["conditions"] if c["type"] == "MetricsAvailable")
        assert rig.condition("MetricsAvailable") == "False" and words in message, message
        assert rig.reasons.count("MetricsUnavailable") == 1  # said once, not every tick

    _clear_fault(prometheus, mode)
    for _ in range(2):
        await rig.tick()
    assert rig.condition("MetricsAvailable") == "True"
    assert rig.phase() in ("Stable", "Scaling")  # resumed


@pytest.mark.parametrize("mode", ["down", "slow", "garbage", "nan", "negative", "negative-rate"])
async def test_an_incident_is_neither_ended_nor_restarted_by_a_prometheus_fault(cluster, api, example, prometheus, tally, mode):
    with tally.attempt(f"prometheus {mode} (emergency)"):
        await _emergency_case(cluster, api, example, prometheus, mode)


async def _emergency_case(cluster, api, example, prometheus, mode):
    rig = await _rig(cluster, api, example, prometheus)
    prometheus.latency_ms = 450.0  # > 2.0 x SLO 200 ms
    for _ in range(2):
        await rig.tick()
    assert rig.phase() == "Emergency" and rig.weights() == {"a": 70, "b": 30}
    replicas = rig.replicas()

    _set_fault(prometheus, mode)
    for _ in range(4):
        await rig.tick()
    assert rig.weights() == {"a": 70, "b": 30}  # no cut-back on missing data
    assert rig.replicas()["b"] >= replicas["b"]  # the reserve is not taken away
    assert not {"Recovered", "CutbackStep", "CutbackCompleted"} & set(rig.reasons)

    _clear_fault(prometheus, mode)
    for _ in range(2):
        await rig.tick()
    assert rig.phase() == "Emergency"  # still the same incident: the latency is still high
    assert rig.reasons.count("EmergencyStarted") == 1
