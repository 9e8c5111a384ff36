"""Fault campaign, API server side: 409, 429 and 500 on the writes of the loop, and dropped watches.

In-process loop: the fault lands on the write a tick needs (scale, weights,
status, snapshot). Expected: the tick either carries on (a snapshot is a
report) or fails with a retryable `ApiError` (kopf's timer runs it again);
either way the next ticks reach the same state a fault-free run reaches,
without a second EmergencyStarted. Dropped watches need kopf itself: the real
operator process reconnects and applies a spec change made meanwhile.
(Faults on creating the children are in tests/operator/test_operator_e2e.py.)
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from forescale_operator.kube.errors import ApiError
from loop_rig import LoopRig, spec_body

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))
from operator_harness import OperatorProcess, wait_until  # noqa: E402

#: what the tick writes -> (resource, verbs, subresource)
TARGETS = {
    "scale": ("deployments", {"patch", "update"}, ""),
    "weights": ("httproutes", {"patch", "update"}, ""),
    "status": ("inferencedeployments", {"patch", "update"}, "status"),
    "snapshot": ("configmaps", {"create"}, None),
}


async def _stable(cluster, api, example) -> LoopRig:
    rig = LoopRig(cluster, api)
    await rig.create(spec_body(example))
    for _ in range(3):
        await rig.tick()
    return rig


async def _tick_through_faults(rig: LoopRig, ticks: int) -> list[ApiError]:
    errors = []
    for _ in range(ticks):
        try:
            await rig.tick()
        except ApiError as exc:
            errors.append(exc)
    return errors


@pytest.mark.parametrize("status", [409, 429, 500])
@pytest.mark.parametrize("target", ["scale", "status"])
async def test_a_failed_write_during_a_scale_up_is_retried(cluster, api, example, tally, status, target):
    with tally.attempt(f"api {status} on {target} (scale-up)"):
        rig = await _stable(cluster, api, example)
        before = rig.replicas()
        resource, verbs, subresource = TARGETS[target]
        cluster.inject_faults(status, count=1, resource=resource, verbs=verbs, subresource=subresource)
        rig.source.rate = 70.0  # within A's maxReplicas at the prior's 10 rps per pod
        errors = await _tick_through_faults(rig, 3)
        assert all(e.retryable and e.status == status for e in errors), errors
        assert cluster.server.faults.pending() == 0  # the fault was met
        # the scale-up landed despite the fault, and status says what the Deployments hold
        pools = rig.status()["pools"]
        assert rig.replicas() == {p: pools[p]["desiredReplicas"] for p in ("a", "b")}
        assert sum(rig.replicas().values()) > sum(before.values()), (before, rig.replicas())
        assert rig.phase() == "Stable"


@pytest.mark.parametrize("status", [409, 429, 500])
@pytest.mark.parametrize("target", ["weights", "status", "snapshot"])
async def test_a_failed_write_as_an_incident_starts_is_retried(cluster, api, example, tally, status, target):
    with tally.attempt(f"api {status} on {target} (incident)"):
        rig = await _stable(cluster, api, example)
        resource, verbs, subresource = TARGETS[target]
        cluster.inject_faults(status, count=1, resource=resource, verbs=verbs, subresource=subresource)
        rig.source.latency_ms = 450.0
        errors = await _tick_through_faults(rig, 3)
        assert all(e.retryable and e.status == status for e in errors), errors
        assert cluster.server.faults.pending() == 0
        assert rig.phase() == "Emergency" and rig.weights() == {"a": 70, "b": 30}
        assert rig.status()["pools"]["a"]["runtimePrecision"] == "int8"
        assert rig.reasons.count("EmergencyStarted") == 1
        assert len(rig.snapshots()) == (0 if target == "snapshot" else 1)  # a failed snapshot is reported, not retried


def _fast(body: dict) -> dict:
    body["spec"]["forecast"] = {"stepSeconds": 1}
    return body


def test_dropped_watches_at_random_moments_the_operator_applies_every_change(cluster, example, tally, tmp_path):
    rng = random.Random(8)
    operator = OperatorProcess(cluster, tmp_path / "operator.log")
    try:
        cluster.put(_fast(example()))
        wait_until(lambda: cluster.get("deployments", "default", "chat-a"), 30, "chat-a created", operator)
        for replicas in (3, 4, 5):  # raises only: without metrics the operator never scales down
            with tally.attempt("api dropped watches"):
                cluster.drop_watches()
                wait_until(lambda: operator.process.poll() is None, 1, "operator alive", operator)
                body = cluster.get("inferencedeployments", "default", "chat")
                body["spec"]["pools"]["a"]["minReplicas"] = replicas
                body["spec"]["pools"]["a"]["maxReplicas"] = 10
                cluster.put(body)
                if rng.random() < 0.5:
                    cluster.drop_watches()  # again, after the change: the relist must still see it
                wait_until(lambda: cluster.get("deployments", "default", "chat-a")["spec"]["replicas"] == replicas, 30,
                           f"chat-a at {replicas} replicas after a dropped watch", operator)
                assert operator.process.poll() is None
    finally:
        operator.stop()
