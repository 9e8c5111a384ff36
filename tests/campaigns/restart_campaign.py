"""The operator killed at seeded random moments of every phase, then restarted: the shared driver of the
short form (tests/campaigns/test_restart_every_phase.py) and the long form (bench/campaign_faults.py).

A scripted run walks the resource through Stable, Scaling, Emergency,
Recovering, CuttingBack and Degraded. In the chosen ticks a seeded random API
call (event posts count as calls: they are API creates in the operator) is
replaced by a kill (`OperatorKilled`); the operator restarts with fresh
memory and ticks again at once. After each restart it must resume:

- the same children, none duplicated;
- an incident in progress stays in progress (same phase or its next one),
  its cut-back step never goes back;
- and over the whole run, at most one EmergencyStarted per incident the
  status went through.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from loop_rig import LoopRig, OperatorKilled

INCIDENT = ("Emergency", "Recovering", "CuttingBack")
PHASES = ("Stable", "Scaling", "Emergency", "Recovering", "CuttingBack", "Degraded")

#: (p99 latency ms, rate rps, Prometheus up) per tick of 5 s: a scale-up, an incident, its cut-back, an outage
SCRIPT: list[tuple[float, float, bool]] = (
    [(60, 40, True)] * 3 + [(60, 400, True)] * 3 + [(60, 40, True)] * 2 + [(450, 40, True)] * 3
    + [(60, 40, True)] * 7 + [(60, 40, False)] * 3 + [(60, 40, True)] * 3
)


class KillingEvents:
    """Wraps the rig's current event sink: each post is an API call of the operator, so it can be a kill point."""

    def __init__(self, rig: LoopRig) -> None:
        self.rig = rig

    async def post(self, reason: Any, message: str) -> None:
        api = self.rig.api
        api.calls += 1
        if api.kill_at is not None and api.calls >= api.kill_at:
            api.kill_at = None
            raise OperatorKilled(f"killed at API call {api.calls} (event {reason.value})")
        await self.rig.sinks[-1].post(reason, message)


@dataclass
class Kill:
    phase: str
    tick: int
    call: int
    ok: bool = True
    problem: str = ""


@dataclass
class RunResult:
    seed: int
    kills: list[Kill] = field(default_factory=list)
    incidents: int = 0
    emergency_started: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and all(k.ok for k in self.kills)


def _engine_incident(status: dict) -> Any:
    try:
        return json.loads(status.get("engine") or "{}").get("incident")
    except ValueError:
        return None


async def run_with_kills(rig: LoopRig, create_body: dict, seed: int, kill_probability: float = 1.0,
                         once_per_phase: bool = True) -> RunResult:
    """Drive SCRIPT with kills; return what was killed where and what went wrong (nothing, we hope)."""
    rng = random.Random(seed)
    result = RunResult(seed)
    await rig.create(create_body)
    children = rig.children()
    killed_in: set[str] = set()
    previous_phase = rig.phase()
    rig.deps.events = KillingEvents(rig)
    for index, (latency, rate, up) in enumerate(SCRIPT):
        rig.source.latency_ms, rig.source.rate, rig.source.up = latency, rate, up
        before = rig.status()
        phase = before.get("phase") or "Pending"
        kill = None
        if phase in PHASES and not (once_per_phase and phase in killed_in) and rng.random() < kill_probability:
            # Up to 9 calls: a tick makes 5 to 10 (reads, patches, events, status).
            kill = Kill(phase, index, rng.randint(1, 9))
            rig.api.kill_at = rig.api.calls + kill.call
        try:
            await rig.tick()
            if kill is not None:
                rig.api.kill_at = None  # the tick made fewer calls: the kill lands between ticks
        except OperatorKilled:
            pass
        if kill is not None:
            killed_in.add(phase)
            result.kills.append(kill)
            rig.restart()
            rig.deps.events = KillingEvents(rig)
            await rig.tick(0.5)  # the new operator's first tick, right away
            _check_resumed(rig, kill, before, children)
        after = rig.phase()
        if after == "Emergency" and previous_phase not in INCIDENT:
            result.incidents += 1
        previous_phase = after
    result.emergency_started = rig.reasons.count("EmergencyStarted")
    # At most one per incident: state is written before acting, so a kill can lose the event, never repeat it.
    if result.emergency_started > result.incidents:
        result.problems.append(f"{result.emergency_started} EmergencyStarted events for {result.incidents} incidents")
    if rig.children() != children:
        result.problems.append(f"children changed: {rig.children()} != {children}")
    if rig.phase() not in ("Stable", "Scaling") or rig.weights() != {"a": 100, "b": 0}:
        result.problems.append(f"did not settle: phase {rig.phase()}, weights {rig.weights()}")
    return result


def _check_resumed(rig: LoopRig, kill: Kill, before: dict, children: dict) -> None:
    status = rig.status()
    problems = []
    if rig.children() != children:
        problems.append(f"children {rig.children()} != {children}")
    phase_before, phase_after = before.get("phase"), status.get("phase")
    if phase_before in INCIDENT:
        # Completed: the route is back at 100/0 and the engine holds no incident. Its CutbackCompleted
        # event may be missing when the kill fell between the status write and the post (at most once).
        completed = rig.weights() == {"a": 100, "b": 0} and _engine_incident(status) is None
        if phase_after not in INCIDENT and not (phase_after in ("Stable", "Scaling") and completed):
            problems.append(f"incident lost: {phase_before} -> {phase_after}")
        went_back = phase_after in INCIDENT and INCIDENT.index(phase_after) < INCIDENT.index(phase_before)
        if went_back and "CutbackAborted" not in rig.reasons:
            problems.append(f"incident went back: {phase_before} -> {phase_after}")
        if phase_after in INCIDENT and _engine_incident(status) is None:
            problems.append("the engine state lost its incident")
        step_before = (before.get("cutback") or {}).get("step", 0)
        step_after = (status.get("cutback") or {}).get("step", 0)
        if phase_after in INCIDENT and step_after < step_before:
            problems.append(f"cut-back step went back {step_before} -> {step_after}")
    if problems:
        kill.ok, kill.problem = False, "; ".join(problems)
