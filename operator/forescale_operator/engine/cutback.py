"""Rule 4: recovery and the gradual cut-back (Flagger-like stepping).

- Emergency -> Recovering once latency is under the target (and no measured
  trigger holds); back to Emergency if it rises over the target again.
- Recovering -> CuttingBack once it stayed under for `stableSeconds`
  (event Recovered); the first step is taken on that tick.
- Every `intervalSeconds`, move `stepPercent` back to A, only if A's ready
  capacity can carry A's new share of the current rate. The step that ends the
  cut-back also restores A's template precision, so it is checked against A's
  capacity at that precision.
- Latency over the target during the cut-back aborts it: back to the
  emergency split (CutbackAborted), phase Emergency.
- Where A's clock speaks, a device still past the device trigger's line
  (triggers.py) counts as over the target: the shift and int8 can bring the
  latency under it while the pods are still slow, and handing traffic back
  to them then only runs into the abort (or, at the last step, asks for pods
  at a capacity the slow device does not have).
- At 100/0: CutbackCompleted, then PrecisionRestored if A was downgraded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from forescale_operator.phase import Phase
from forescale_operator.reasons import Reason
from forescale_operator.spec import InferenceSpec

from .playbook import ShiftLimit, shift_action
from .types import Action, EngineParams, Event, RestorePrecision


@dataclass
class Progress:
    """The incident's next stage and what moving there takes."""

    incident: Phase | None
    weight_b: int
    under_slo_since: float | None
    step: int
    next_at: float | None
    runtime_precision_a: str | None
    emergency_weight_b: int
    actions: list[Action] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Health:
    """Latency against the target this tick."""

    latency_ms: float | None
    #: a trigger that latency alone does not show (errors, a piling queue) holds
    triggered: bool
    label: str  # e.g. "p99"
    #: A's device time per unit of work over its clock's, where past the device trigger's line (else None):
    #: pods still that slow have not recovered, whatever the latency the shift and int8 buy them
    device_ratio: float | None = None

    @property
    def known(self) -> bool:
        return self.latency_ms is not None

    def under(self, target: float) -> bool:
        return (self.latency_ms is not None and self.latency_ms <= target and not self.triggered
                and self.device_ratio is None)

    def over(self, target: float) -> bool:
        return (self.latency_ms is not None and self.latency_ms > target) or self.triggered or self.device_ratio is not None

    def text(self) -> str:
        """`p99 643 ms`, with the device where it is still slow (`; device 2.50x its usual time per unit`)."""
        lat = f"{self.label} {self.latency_ms:.0f} ms" if self.known else "latency unknown"
        return lat + (f"; device {self.device_ratio:.2f}x its usual time per unit" if self.device_ratio else "")


def advance(
    spec: InferenceSpec,
    p: Progress,
    health: Health,
    rate_rps: float,
    ready_a: int,
    cap_a_runtime: float,
    cap_a_template: float,
    limit: ShiftLimit,
    now: float,
    params: EngineParams,
) -> Progress:
    """Move the incident on by one tick. `p` starts as the persisted stage and is updated in place."""
    target = spec.slo.target_latency_ms
    cut = spec.traffic.cutback
    lat = health.text()

    if p.incident in (Phase.EMERGENCY, Phase.RECOVERING):
        if not health.known:
            p.reasons.append("incident holds: latency unknown")
            return p
        if not health.under(target):
            p.incident, p.under_slo_since = Phase.EMERGENCY, None
            return p
        p.under_slo_since = p.under_slo_since if p.under_slo_since is not None else now
        stayed = now - p.under_slo_since
        if stayed < cut.stable_seconds:
            p.incident = Phase.RECOVERING
            p.reasons.append(f"recovering: {lat} <= SLO {target:.0f} ms for {stayed:.0f} of {cut.stable_seconds} s")
            return p
        p.events.append(Event(Reason.RECOVERED, f"Declare recovery: {lat} <= SLO {target:.0f} ms for {stayed:.0f} s"))
        p.incident, p.step, p.next_at = Phase.CUTTING_BACK, 0, now

    if p.incident is not Phase.CUTTING_BACK:
        return p

    if health.over(target):
        back = min(p.emergency_weight_b, limit.percent)
        slow_only = health.device_ratio is not None and not (health.known and health.latency_ms > target)
        why = (f"the device at {health.device_ratio:.2f}x its usual time per unit of work again" if slow_only
               else f"{lat} > SLO {target:.0f} ms")
        msg = f"Abort the cut-back at step {p.step} (b {p.weight_b}%): {why}; back to b {back}%"
        p.events.append(Event(Reason.CUTBACK_ABORTED, msg))
        if back != p.weight_b:
            p.actions.append(shift_action(back, msg))
        p.incident, p.weight_b, p.under_slo_since, p.step, p.next_at = Phase.EMERGENCY, back, None, 0, None
        return p
    if p.next_at is not None and now < p.next_at:
        p.reasons.append(f"cut-back step {p.step + 1} at {p.next_at:.0f} (in {p.next_at - now:.0f} s)")
        return p

    new_b = max(0, p.weight_b - cut.step_percent)
    finishing = new_b == 0
    restoring = finishing and p.runtime_precision_a is not None
    per_pod = cap_a_template if restoring else cap_a_runtime
    need = (100 - new_b) / 100.0 * rate_rps
    have = ready_a * per_pod
    if need > have + 1e-9:
        p.reasons.append(
            f"cut-back waits: a ready capacity {have:.0f} rps < {need:.0f} rps for a {100 - new_b}%"
        )
        return p
    a = params.pool_name("a")
    if p.weight_b > 0:
        msg = (
            f"Move {p.weight_b - new_b}% back to {a} (a {100 - new_b}%, b {new_b}%): "
            f"a ready capacity {have:.0f} rps >= {need:.0f} rps; {lat}"
        )
        p.actions.append(shift_action(new_b, msg))
        p.events.append(Event(Reason.CUTBACK_STEP, msg))
        p.step += 1
    p.weight_b, p.next_at = new_b, now + cut.interval_seconds
    if finishing:
        p.events.append(Event(Reason.CUTBACK_COMPLETED, f"Complete the cut-back after {p.step} steps: all traffic on {a}"))
        if restoring:
            msg = f"Restore {a} from {p.runtime_precision_a} to {spec.a.precision}: cut-back complete"
            p.actions.append(RestorePrecision(precision=spec.a.precision, message=msg))
            p.events.append(Event(Reason.PRECISION_RESTORED, msg))
        p.incident, p.under_slo_since, p.step, p.next_at, p.runtime_precision_a = None, None, 0, None, None
        p.emergency_weight_b = 0
    return p
