"""Status, written only through the status subresource and only through these narrow setters.

`StatusUpdate` starts from the status the object has, collects changes as a
merge patch, and is written with one PATCH to `/status` (`write_status`).
Conditions are typed (`ConditionType`), start as Unknown, and keep their
lastTransitionTime unless their status flips.

Some fields change on every tick that reads metrics: the engine's learned
state, the forecast, the decision's one-line summary, each pool's fitted
capacity and model, a condition's message with its numbers. Those are
`REFRESHED`: the tick writes them with anything else that changed, and
otherwise at most every few steps (`pressing_fields` tells the two apart), so a
steady resource costs the API server a PATCH every few ticks, not one per
tick, the way kube-controller-manager's HPA writes status only on a change.
A move between Stable and Scaling waits likewise, and keeps the time it
happened until it is written (`unwritten_transition`).
In Preview, where nothing acts, each decision's `lastDecision` is written.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any, Mapping

from .kube.client import KubeApi
from .kube.refs import INFERENCE_DEPLOYMENTS
from .kube.timestamps import epoch_seconds, rfc3339
from .phase import Phase
from .reasons import ConditionReason, ConditionType
from .weights import Weights


#: top-level fields refreshed rather than written on every change (their first value is written at once)
REFRESHED = frozenset({"engine", "forecast", "lastDecision"})
#: a pool's fields refreshed likewise: what the engine has fitted, what the Deployment observes (its replicas
#: and ready pods, and the ready/desired summary), and the replicas decided. A scale is carried out on the
#: Deployment (its spec.replicas) and said in a ScaledUp/ScaledDown event on the tick it is decided; status
#: mirrors it within a refresh. Written on every change, a scale-up wrote status at the decision and at each
#: pod that came ready (bench.operator_scale, docs/operator-scale.md runs 18 and 20).
REFRESHED_IN_POOL = frozenset({"capacityRps", "model", "replicas", "readyReplicas", "summary", "desiredReplicas"})
#: phases that only say whether the Deployments have the pods they were asked for (desired != ready): a move
#: between them is observed, not decided, and is refreshed like the replica counts it follows. Every other
#: phase (an incident, Degraded, Invalid, Pending) is pressing, and so is a move into or out of one.
OBSERVED_PHASES = frozenset({Phase.STABLE.value, Phase.SCALING.value})


def _standing(condition: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """What of a condition is pressing when it changes: not its message, whose numbers move every tick, nor a
    reason that is an observed phase (Ready's reason is the phase: Stable or Scaling)."""
    reason = condition.get("reason")
    return condition.get("status"), None if reason in OBSERVED_PHASES else reason, condition.get("observedGeneration")


def _merged(patch: Mapping[str, Any], old: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """`patch` with `values` set over it: a value equal to the object's (`old`) is no change and leaves the patch."""
    out = dict(patch)
    for key, value in values.items():
        if old.get(key) != value:
            out[key] = value
        else:
            out.pop(key, None)
    return out


def _put(target: dict[str, Any], key: str, section: dict[str, Any]) -> None:
    """Set a section of the patch, or drop it when nothing in it changes."""
    if section:
        target[key] = section
    else:
        target.pop(key, None)


def _tristate(value: bool | None) -> str:
    return "Unknown" if value is None else ("True" if value else "False")


class StatusUpdate:
    """Changes to one object's status. Read `.patch`; empty when nothing changed."""

    def __init__(self, current: Mapping[str, Any] | None, generation: int | None = None, *,
                 now: float | None = None, unwritten_phase: tuple[str, str] | None = None) -> None:
        """`now`: the tick's clock, epoch seconds (default: the wall clock). `unwritten_phase`: a phase the last
        tick moved to and did not write (Stable <-> Scaling waits for the refresh), with the time it moved
        (`unwritten_transition`): set again here, it keeps that time, not this tick's."""
        self._current = copy.deepcopy(dict(current or {}))
        self._generation = generation
        self._stamp = rfc3339(time.time() if now is None else now)
        self._unwritten_phase = unwritten_phase
        self._patch: dict[str, Any] = {}
        self._conditions = {c.get("type"): dict(c) for c in self._current.get("conditions") or [] if isinstance(c, Mapping)}
        #: the conditions as the object has them: a transition is measured against these, not against a value
        #: set earlier in the same update (the tick sets Ready from readiness, then from the engine)
        self._original = {t: dict(c) for t, c in self._conditions.items()}
        for ctype in ConditionType:
            if ctype.value not in self._conditions:
                self._conditions[ctype.value] = {"type": ctype.value, "status": "Unknown",
                                                 "reason": ConditionReason.NOT_OBSERVED.value,
                                                 "message": "not observed yet", "lastTransitionTime": self._stamp}

    # The last setter wins: the tick sets some fields twice (weights and replicas from what it observed, then from
    # what the engine decided), and a value set back to what the object holds is no change, not the earlier value.
    def _set(self, key: str, value: Any) -> None:
        if self._current.get(key) != value:
            self._patch[key] = value
        else:
            self._patch.pop(key, None)

    def _set_in(self, section: str, values: Mapping[str, Any]) -> None:
        _put(self._patch, section, _merged(self._patch.get(section) or {}, self._current.get(section) or {}, values))

    def phase(self, phase: Phase) -> None:
        """The phase, and since when it holds (`lastTransitionTime`, as a Flagger Canary's status has it): set
        when the phase changes, and once on an object written before the field existed. The alerts on a long
        Emergency or a stuck cut-back read it (forescale_operator_phase_since_seconds)."""
        was = self._current.get("phase")
        self._set("phase", phase.value)
        if phase.value != was or not self._current.get("lastTransitionTime"):
            moved = self._unwritten_phase
            self._set("lastTransitionTime", moved[1] if moved and moved[0] == phase.value and phase.value != was
                      else self._stamp)
        else:  # set back within one update (readiness, then the engine): no transition
            self._patch.pop("lastTransitionTime", None)

    def condition(self, ctype: ConditionType, status: bool | None, reason: ConditionReason | str, message: str) -> None:
        """Set one condition; `reason` is a `ConditionReason`, or the engine's own word for it (engine/report.py)."""
        old = self._conditions.get(ctype.value, {})
        was = self._original.get(ctype.value) or {}
        value = _tristate(status)
        reason = reason.value if isinstance(reason, ConditionReason) else str(reason)
        if was.get("status") == value:
            since = was.get("lastTransitionTime")  # no transition, whatever was set in between
        else:
            since = old.get("lastTransitionTime") if old.get("status") == value else self._stamp
        new = {"type": ctype.value, "status": value, "reason": reason, "message": message, "lastTransitionTime": since}
        if self._generation is not None:
            new["observedGeneration"] = self._generation
        if {k: old.get(k) for k in new} != new:
            self._conditions[ctype.value] = new

    def pool(self, pool: str, *, replicas: int | None = None, ready: int | None = None, desired: int | None = None,
             precision: str | None = None, runtime_precision: str | None = None, capacity_rps: float | None = None,
             model: Mapping[str, float] | None = None, deployment: str | None = None) -> None:
        values: dict[str, Any] = {}
        for key, value in (("replicas", replicas), ("readyReplicas", ready), ("desiredReplicas", desired),
                           ("precision", precision), ("runtimePrecision", runtime_precision),
                           ("capacityRps", capacity_rps), ("model", dict(model) if model else None),
                           ("deployment", deployment)):
            if value is not None:
                values[key] = value
        old = ((self._current.get("pools") or {}).get(pool) or {})
        pools = dict(self._patch.get("pools") or {})
        merged = {**old, **(pools.get(pool) or {}), **values}
        if "readyReplicas" in merged or "desiredReplicas" in merged:
            # The printer columns A and B show ready/desired, like READY in `kubectl get deploy`.
            values["summary"] = f"{merged.get('readyReplicas', 0)}/{merged.get('desiredReplicas', 0)}"
        _put(pools, pool, _merged(pools.get(pool) or {}, old, values))
        _put(self._patch, "pools", pools)

    def weights(self, weights: Weights) -> None:
        self._set_in("weights", weights.as_dict())

    def preview(self, would: Mapping[str, Any] | None) -> None:
        """In Preview, what Auto would set now; None (outside Preview) removes the section."""
        self._set("preview", dict(would) if would is not None else None)

    def adopted(self, text: str | None) -> None:
        """The existing objects this resource scales or weights (its targetRefs and routeRef); None removes it."""
        self._set("adopted", text or None)

    def observed_generation(self, generation: int) -> None:
        self._set("observedGeneration", generation)

    def last_decision(self, text: str) -> None:
        self._set("lastDecision", text)

    def forecast(self, **fields: Any) -> None:
        """peakLatencyMs, peakRate, horizonSeconds, model, generatedAt, recentErrorMs, bandCoverage."""
        self._set_in("forecast", fields)

    def cutback(self, step: int, next_at: str | None) -> None:
        self._set_in("cutback", {"step": step, "nextAt": next_at})

    def diagnosis(self, field: Mapping[str, Any]) -> None:
        """The incident's ranked causes (`Diagnosis.status_field`), replaced whole: a finding left
        over from an earlier incident must not survive a merge into the new list."""
        self._set("diagnosis", dict(field))

    def engine_state(self, state: Mapping[str, Any]) -> None:
        """The decision engine's memory (`EngineState.to_status()`) as compact JSON, so a restart
        resumes the same step. A string keeps the CRD's status schema structural and closed."""
        self._set("engine", json.dumps(state, sort_keys=True, separators=(",", ":")))

    def undone(self) -> "StatusUpdate":
        """The update that puts back what this one changes, once it has been written (a write-ahead undone)."""
        written = {**self._current, **self.patch}
        back = StatusUpdate(written, self._generation)
        back._patch = {key: copy.deepcopy(self._current.get(key)) for key in self._patch}
        return back

    def value(self, key: str) -> Any:
        """A top-level field as the object will have it once this update is written."""
        return self._patch[key] if key in self._patch else self._current.get(key)

    def unwritten_transition(self) -> tuple[str, str] | None:
        """The phase this update moves to and since when, for the next tick's update if this one is not written
        (None when it moves nothing). Why: a move between Stable and Scaling waits for the refresh, and each
        tick in between would otherwise stamp it anew: status said it began at the write, up to a refresh late,
        and forescale_operator_phase_since_seconds restarted at every tick until then."""
        if "lastTransitionTime" not in self._patch or "phase" not in self._patch:
            return None
        return self._patch["phase"], self._patch["lastTransitionTime"]

    def phase_since(self) -> float | None:
        """Since when the phase holds, in epoch seconds (`lastTransitionTime` once written; None before any)."""
        return epoch_seconds(self.value("lastTransitionTime"))

    def _previewed(self, key: str) -> bool:
        """In Preview nothing acts, so the decision's summary is what the resource is for: each one is written
        (DESIGN.md, "Preview mode": each decision is reported in status.lastDecision)."""
        return key == "lastDecision" and self.value("preview") is not None

    def pressing_fields(self) -> list[str]:
        """What the patch changes beyond refreshed values, by name (`phase`, `weights`, `conditions.Ready`): the
        phase (but Stable <-> Scaling), weights, the incident, a condition's status, reason or observed generation
        (a new spec), the Preview section, or any field's first value. Empty: only refreshed values.

        Why these go out on the tick they change: an SRE, `kubectl get` and a restarted operator act on them.
        The rest can wait for the next refresh; a restart loses at most that much of the learned state.
        """
        names = []
        for key, value in self._patch.items():
            if key == "pools":
                for pool, fields in value.items():
                    old = (self._current.get("pools") or {}).get(pool) or {}
                    names += [f"pools.{pool}.{k}" for k in fields if k not in REFRESHED_IN_POOL or old.get(k) is None]
            elif key == "phase" and {value, self._current.get(key)} <= OBSERVED_PHASES:
                continue  # Stable <-> Scaling: the Deployments catching up, observed (OBSERVED_PHASES)
            elif key == "lastTransitionTime":
                continue  # goes out with its phase, pressing as the phase is (alone: a first value, refreshed)
            elif key not in REFRESHED or self._current.get(key) is None or self._previewed(key):
                names.append(key)
        return names + [f"conditions.{t}" for t, c in self._conditions.items()
                        if _standing(c) != _standing(self._original.get(t) or {})]

    @property
    def patch(self) -> dict[str, Any]:
        patch = copy.deepcopy(self._patch)
        order = [c.value for c in ConditionType]
        conditions = [self._conditions[t] for t in order] + [c for t, c in self._conditions.items() if t not in order]
        if conditions != list(self._current.get("conditions") or []):  # a list is replaced whole: only when it changed
            patch["conditions"] = copy.deepcopy(conditions)
        return patch


async def write_status(api: KubeApi, namespace: str, name: str, update: StatusUpdate) -> bool:
    """PATCH /status with the collected changes; False when there were none."""
    patch = update.patch
    if not patch:
        return False
    await api.patch(INFERENCE_DEPLOYMENTS, namespace, name, {"status": patch}, subresource="status")
    return True
