"""Fault campaign: the operator killed at a seeded random API call in every phase, then restarted (short form).

bench/campaign_faults.py runs more seeds, with several kills per phase.
"""

from __future__ import annotations

import json

import pytest

from forescale_devcluster.apiserver import start_apiserver
from forescale_operator.kube.http import Connection, HttpKubeApi
from loop_rig import LoopRig, OperatorKilled, spec_body
from restart_campaign import PHASES, run_with_kills


@pytest.mark.parametrize("seed", [0, 1])
async def test_killed_in_every_phase_the_operator_resumes(cluster, api, example, tally, seed):
    rig = LoopRig(cluster, api)
    result = await run_with_kills(rig, spec_body(example), seed)
    for kill in result.kills:
        tally.fault(f"operator killed in {kill.phase}", kill.ok)
    assert {k.phase for k in result.kills} == set(PHASES)  # every phase was hit
    assert all(k.ok for k in result.kills), [vars(k) for k in result.kills if not k.ok]
    assert result.ok, result.problems
    assert result.incidents >= 1


@pytest.mark.parametrize("call", [1, 2, 3, 4])
async def test_killed_while_pending_the_operator_resumes_without_duplicates(crds_dir, example, tally, call):
    """Pending: the children exist but nothing is ready (no pod runner); kill during creation and during a tick."""
    handle = start_apiserver(crds_dir, ready_deployments=False, namespaces=("default",))
    client = HttpKubeApi(Connection(handle.url))
    try:
        with tally.attempt("operator killed in Pending"):
            rig = LoopRig(handle, client)
            rig.api.kill_at = call  # during the first reconcile: some children made, some not
            try:
                await rig.create(spec_body(example))
            except OperatorKilled:
                rig.restart()
                await rig.create(spec_body(example))
            children = rig.children()
            assert children == {"deployments": ["chat-a", "chat-b"], "services": ["chat", "chat-a", "chat-b"], "httproutes": ["chat"]}
            await rig.tick()
            assert rig.phase() == "Pending"
            rig.api.kill_at = rig.api.calls + call
            try:
                await rig.tick()
            except OperatorKilled:
                pass
            rig.restart()
            await rig.tick()
            assert rig.phase() == "Pending" and rig.children() == children
    finally:
        await client.close()
        handle.stop()


async def _rig_at_stable(cluster, api, example) -> LoopRig:
    from restart_campaign import KillingEvents

    rig = LoopRig(cluster, api)
    await rig.create(spec_body(example))
    rig.deps.events = KillingEvents(rig)
    for _ in range(3):
        await rig.tick()
    return rig


async def _kill_then_restart(rig: LoopRig, call: int, ticks_after: int = 2) -> bool:
    from restart_campaign import KillingEvents

    rig.api.kill_at = rig.api.calls + call
    killed = False
    try:
        await rig.tick()
    except OperatorKilled:
        killed = True
    rig.api.kill_at = None
    rig.restart()
    rig.deps.events = KillingEvents(rig)
    for _ in range(ticks_after):
        await rig.tick(0.5)
    return killed


# Regression: a kill after EmergencyStarted was posted but before status was written made the new
# operator start the same incident again (a second EmergencyStarted, a second snapshot attempt).
@pytest.mark.parametrize("call", range(1, 15))
async def test_killed_at_any_call_of_the_tick_that_starts_an_incident_no_second_emergency(cluster, api, example, tally, call):
    with tally.attempt("operator killed as the incident starts"):
        rig = await _rig_at_stable(cluster, api, example)
        rig.source.latency_ms = 450.0
        await _kill_then_restart(rig, call)
        assert rig.phase() == "Emergency" and rig.weights() == {"a": 70, "b": 30}
        assert rig.status()["pools"]["a"]["runtimePrecision"] == "int8"
        # At most once: the state is written before the events, so a kill in between loses the event
        # rather than repeating the incident (docs/campaigns.md).
        assert rig.reasons.count("EmergencyStarted") <= 1, rig.reasons
        assert json.loads(rig.status()["engine"])["incident"]["stage"] == "Emergency"


# Regression: a kill between moving the weights and writing status made the new operator move them
# back a step and post the same CutbackStep again.
@pytest.mark.parametrize("call", range(1, 10))
async def test_killed_at_any_call_of_a_cutback_step_the_step_is_not_repeated(cluster, api, example, tally, call):
    with tally.attempt("operator killed in a cut-back step"):
        rig = await _rig_at_stable(cluster, api, example)
        rig.source.latency_ms = 450.0
        for _ in range(2):  # the deviation trigger needs 2 of 3 ticks
            await rig.tick()
        assert rig.phase() == "Emergency"
        rig.source.latency_ms = 60.0
        for _ in range(20):
            if rig.phase() == "CuttingBack":
                break
            await rig.tick()
        assert rig.phase() == "CuttingBack" and rig.weights() == {"a": 80, "b": 20}
        history = [rig.weights()["b"]]
        await _kill_then_restart(rig, call, ticks_after=0)
        for _ in range(6):
            history.append(rig.weights()["b"])
            await rig.tick(5.0)
        history.append(rig.weights()["b"])
        assert history == sorted(history, reverse=True), history  # b's share never goes back up
        assert rig.reasons.count("CutbackStep") <= 3 and rig.reasons.count("CutbackCompleted") == 1, rig.reasons
        assert rig.weights() == {"a": 100, "b": 0}
