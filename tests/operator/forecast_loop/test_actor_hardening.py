"""Issue 19 defects in the loop's actor layer, driven through the real tick against an emulated API server.

6. A bad `forescale.io/admin-port` annotation raised on every tick: no incident could start.
8. A wall-clock jump stalled the cut-back (backwards) or skipped the stable period (forwards).
10. Switching Auto -> Preview mid-incident reported 100/0 and fp16 while the route stayed 70/30 and the pods int8.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "campaigns"))

from loop_rig import NAME, NS, LoopRig, spec_body  # noqa: E402


async def _rig(cluster, api, example, **spec_changes) -> LoopRig:
    rig = LoopRig(cluster, api)
    body = spec_body(example)
    body["spec"].update(spec_changes)
    await rig.create(body)
    for _ in range(3):
        await rig.tick()
    return rig


async def _emergency(rig: LoopRig) -> None:
    rig.source.latency_ms = 450.0  # > 2.0 x SLO 200 ms
    for _ in range(2):
        await rig.tick()
    assert rig.phase() == "Emergency" and rig.weights() == {"a": 70, "b": 30}


async def _cutting_back(rig: LoopRig) -> None:
    await _emergency(rig)
    rig.source.latency_ms = 60.0
    for _ in range(12):
        await rig.tick()
        if rig.weights()["b"] == 20:
            return
    raise AssertionError(f"no cut-back step: {rig.reasons}")


def _pod(name: str, pool: str, port: str) -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "annotations": {"forescale.io/admin-port": port},
                     "labels": {"forescale.io/deployment": NAME, "forescale.io/pool": pool}},
        "spec": {"containers": [{"name": "server", "image": "x", "ports": [{"name": "http", "containerPort": 8000}]}]},
        "status": {"phase": "Running", "podIP": "10.0.0.9", "conditions": [{"type": "Ready", "status": "True"}]},
    }


@pytest.mark.parametrize("port", ["http", "-1", "70000", "", "8000x"])
async def test_a_bad_admin_port_annotation_skips_the_pod_and_the_incident_still_starts(cluster, api, example, port):
    rig = await _rig(cluster, api, example)
    cluster.put(_pod("chat-a-bad", "a", port))
    await _emergency(rig)  # the loop went on: a 450 ms p99 started the incident
    for _ in range(3):
        await rig.tick()
    assert rig.reasons.count("AdminPortInvalid") == 1  # one Warning, not one a tick
    assert rig.reasons.count("EmergencyStarted") == 1


JUMPS = [-3600.0, -30.0, 3600.0, 30.0]


@pytest.mark.parametrize("jump", JUMPS)
async def test_a_clock_jump_during_the_cutback_neither_stalls_nor_skips_it(cluster, api, example, jump):
    rig = await _rig(cluster, api, example)
    await _cutting_back(rig)
    rig.clock.jump(jump)
    seen = [rig.weights()["b"]]
    for _ in range(8):
        await rig.tick()
        seen.append(rig.weights()["b"])
    assert seen[-1] == 0 and rig.phase() != "CuttingBack", seen  # completed within a few intervals
    # one step per interval (5 s, one tick): a forward jump does not take several at once
    assert all(a - b in (0, 10) for a, b in zip(seen, seen[1:])), seen
    assert "CutbackCompleted" in rig.reasons


@pytest.mark.parametrize("jump", JUMPS)
async def test_a_clock_jump_while_recovering_keeps_the_stable_period(cluster, api, example, jump):
    rig = await _rig(cluster, api, example)
    await _emergency(rig)
    rig.source.latency_ms = 60.0
    await rig.tick()
    assert rig.phase() == "Recovering"
    rig.clock.jump(jump)
    await rig.tick()  # 5 s of the 10 s stable period: still recovering, whichever way the clock went
    assert rig.phase() == "Recovering" and "Recovered" not in rig.reasons
    for _ in range(3):
        await rig.tick()
    assert "Recovered" in rig.reasons


async def test_after_a_restart_a_backward_jump_is_bounded(cluster, api, example):
    """A new operator has no earlier tick to measure the jump against: the next step is at most one interval away."""
    rig = await _rig(cluster, api, example)
    await _cutting_back(rig)
    rig.restart()
    rig.clock.jump(-3600.0)
    for _ in range(6):
        await rig.tick()
    assert rig.weights()["b"] == 0 and "CutbackCompleted" in rig.reasons


async def test_preview_after_auto_reports_what_is_live_and_what_auto_would_do(cluster, api, example):
    rig = await _rig(cluster, api, example)
    await _emergency(rig)
    replicas = rig.replicas()
    body = cluster.get("inferencedeployments", NS, NAME)
    body["spec"]["mode"] = "Preview"
    body["metadata"].pop("resourceVersion", None)
    cluster.put(body)
    for _ in range(3):
        await rig.tick()
    status = rig.status()
    assert rig.weights() == {"a": 70, "b": 30}  # nothing acted
    assert status["weights"] == {"a": 70, "b": 30}  # and status says so
    assert {p: status["pools"][p]["desiredReplicas"] for p in "ab"} == replicas
    assert "preview" in status and set(status["preview"]) == {"weights", "desiredReplicas", "runtimePrecision"}
    # Back to Auto: the section goes.
    body = cluster.get("inferencedeployments", NS, NAME)
    body["spec"]["mode"] = "Auto"
    body["metadata"].pop("resourceVersion", None)
    cluster.put(body)
    await rig.tick()
    assert "preview" not in rig.status()
