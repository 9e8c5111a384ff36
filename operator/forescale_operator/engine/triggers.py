"""Rule 3: incident or overload.

A symptom (latency over the SLO, errors, a piling queue, budget burning) has
two possible causes, and each has its own answer:
- an **overload**: the pods carry more than the latency model says they can
  at the SLO. The model explains the symptom; the answer is more pods, and
  meanwhile B's idle reserve if A's cannot be ready in time (rule 2);
- an **incident**: the pods carry no more than the model's capacity, yet they
  do worse than it predicts. The curve moved; the answer is the playbook.

The playbook starts on any of these, each only while the load is within the
model's capacity (the pods should cope):
- deviation: A's latency is over `triggerRatio x` the model's prediction at
  A's observed per-pod load (or over the model's own noise band, `gate_sigmas`
  standard deviations of its log residual, where that is wider) at the last
  `breach_ticks` ticks running, without draining in between (see below), and
  users are hurt (latency over the target, or the short burn window over
  budget). A pool twice as slow as it should be, serving under the SLO, costs
  nobody anything; the playbook's int8 and lighter model have a quality cost
  worth paying only when the SLO is at risk;
- burn: the share of requests over the SLO, in units of the error budget
  (1 - quantile), reaches `burn_rate` over both a short and a long window
  (multi-window burn-rate alerting, Google SRE workbook ch. 5), while A does
  worse than the model predicts by more than one sigma of its noise. The windows count only the budget burned
  while the pods should have coped (an overload's burn is the overload's).
  It catches a slowdown that keeps the 15 s
  quantile just under the target while 10 s windows go over;
- device: A's device time per unit of work, against the pods' clock
  (pod_clock.py), is over `triggerRatio x` its usual (and past the clock's own
  noise line) at the last `breach_ticks` ticks running, and users are hurt.
  The one trigger an overload does not excuse: load does not slow a device per
  unit of work (a bigger batch makes it faster per item), so pods that carry
  more than the model's capacity and whose device also slowed have changed;
- errors: the share of A's requests rejected or failed is over `errorRatePercent`, unless
  latency is over the target, the pods' clock says the device runs at its
  usual speed (below) and the queue or the latency drains (see Draining):
  those errors are requests that waited past the route's timeout in a burst's
  queue, latency cut short, and the queue is the load's;
- queue: the total queue depth grew at each of the last `queue_growth_ticks`
  ticks, holds at least `queue_min_depth` requests and more than the model's
  in-system count at this load (rate x predicted latency, Little's law), users
  are hurt (as for the deviation), and A does worse than the model by more
  than one sigma.
The deviation, burn and queue triggers also ask the pods' clock (pod_clock.py):
where it can tell, and says the device runs at its usual time per unit of work,
the symptom is load, whatever latency shows (near the knee a batching server's
p99 is several times any smooth curve's, and a burst inside a step queues as a
slowdown does; neither makes the device slower). Errors ask it only when
latency is over the target too: a pod that fails requests fast shows nothing
on the clock and nothing in latency, and starts the playbook whatever the
clock says; timeouts behind a burst's queue at the device's usual speed, while
that queue drains, do not (synthetic bursty traces, seeds 5 and 3, sized at the
exact future rate: 12.9% and 7.2% of requests timed out at 15 s, at 2.8 rps per
pod within the model's 3.2 and 3.6, with the clock at 1.03x and 1.00x, and
started it). A hung pod's timeouts do not drain: the others keep the pool's
clock at its usual speed, and the errors start the playbook.
The forecast's upper latency band crossing `triggerRatio x target` is
reported (ForecastSpike) but starts nothing: what the forecaster sees coming
is load, and load is answered by sizing.

Draining. Pods whose latency over the model fell by the trigger ratio from
one tick to the next drained their queue at the same load: they
cope, and what they showed was a burst inside the step, not a change of the
pods. A step's mean rate hides the seconds within it; near the knee those
seconds pass the capacity and queue, and the next step drains it. On the dev
replays without an incident this pattern (2.5 s, then 0.9 s at 95% of the
capacity; 0.55 s, 0.06 s, 0.39 s at 90%) started the playbook four times out
of five false starts. A changed pod does not drain: a slowdown holds its
latency or, saturated, grows its queue tick after tick. So the deviation
needs its ticks in a row and the burn trigger a tick that is not draining:
neither its latency over the model nor a backlog past the model's in-system
count fell by the trigger ratio since the last tick.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from forescale_operator.spec import InferenceSpec
from forescale_predictor.forecast_types import LATENCY_MS, Forecast

from .types import EngineParams, Observations

DEVIATION, DEVICE, BURN, ERRORS, QUEUE, FORECAST = "deviation", "device", "burn", "errors", "queue", "forecast"


@dataclass(frozen=True)
class Trigger:
    """One reason to start the playbook (or, for `forecast`, to say so), with the numbers behind it."""

    kind: str
    message: str


@dataclass(frozen=True)
class Health:
    """Pool A against its latency model this tick."""

    #: A's observed SLO-quantile latency and per-pod rate (None: not measured)
    latency_ms: float | None
    per_pod_rps: float | None
    #: the model's prediction at that load (healthy pods), and its capacity at the SLO
    predicted_ms: float
    capacity_rps: float
    #: the model's noise: standard deviation of log(observed / predicted) on healthy samples
    sigma: float = 0.0
    #: per-pod load over capacity at the last few ticks, this one last
    loads: tuple[float, ...] = ()
    #: the pods' clock this tick (pod_clock.py): observed over expected device time per unit of
    #: work, and the line past which that is a change of the pods; None: not measured or not ready
    clock_ratio: float | None = None
    clock_line: float = math.inf

    @property
    def pods_changed(self) -> bool:
        """Whether the pods may have changed: their clock says so, or there is no clock to ask
        (none reported, or one still learning: latency alone then decides, as without a clock).
        A clock within its noise says they run at their usual speed, whatever latency shows."""
        return self.clock_ratio is None or self.clock_slow

    @property
    def clock_slow(self) -> bool:
        """Whether the pods' clock reports them slower than usual, past its noise."""
        return self.clock_ratio is not None and self.clock_ratio > self.clock_line

    def clock_text(self) -> str:
        """`; device 2.50x its usual time per unit` or '' without a clock."""
        return "" if self.clock_ratio is None else f"; device {self.clock_ratio:.2f}x its usual time per unit"

    @property
    def explained(self) -> bool:
        """The load is, or was within the trigger window, past what the model says the pods
        carry at the SLO: an overload. Requests queued then finish slow (up to the timeout)
        after the load has dropped, and a step's quantile includes them."""
        return any(x > 1.0 for x in self.loads)

    @property
    def ratio(self) -> float:
        """Observed over predicted latency (0 when either is unknown or the model predicts saturation)."""
        if self.latency_ms is None or not math.isfinite(self.predicted_ms) or self.predicted_ms <= 0:
            return 0.0
        return self.latency_ms / self.predicted_ms


@dataclass(frozen=True)
class TriggerCheck:
    """The triggers that hold now, and the windows to remember."""

    fired: tuple[Trigger, ...]
    queue: tuple[float, ...]
    loads: tuple[float, ...]
    ratios: tuple[float, ...]
    burn: tuple[float, ...]
    health: Health
    #: A's device time per unit over its clock's at the last ticks, this one last (0: no clock, or within its line)
    slow: tuple[float, ...] = ()
    #: latency over the model that the pods' clock put down to load (a reason for status), or None
    load_note: str | None = None

    def has(self, kind: str) -> bool:
        return any(t.kind == kind for t in self.fired)

    @property
    def starting(self) -> tuple[Trigger, ...]:
        """The triggers that start the playbook (all but the forecast's)."""
        return tuple(t for t in self.fired if t.kind != FORECAST)

    @property
    def beyond_latency(self) -> bool:
        """A trigger that latency alone does not show (errors, a piling queue) holds now."""
        return self.has(ERRORS) or self.has(QUEUE)


def quantile_label(quantile: float) -> str:
    """`p99` for 0.99, `p99.9` for 0.999, `p95` for 0.95."""
    return "p" + format(round(quantile * 100, 4), "g")


def overall_latency(obs: Observations) -> float | None:
    """The SLO quantile over both pools; without it, the worse pool's (a quantile
    over the union is at most the larger of the pools' quantiles)."""
    if obs.latency_ms is not None:
        return obs.latency_ms
    pools = [p.latency_ms for p in (obs.a, obs.b) if p.latency_ms is not None]
    return max(pools) if pools else None


def _burn(history: tuple[float, ...], ticks: int, budget: float) -> float:
    """The budget burned over the last `ticks` ticks with traffic, in units of the budget. Ticks the history
    does not hold yet (a resource's first minutes) burned nothing: averaged over the ticks there were, the
    long window of a young resource is as short as the short one, and one bad tick fires both (synthetic
    bursty trace, mean 2.5 req/s, seed 11: the fourth tick of traffic, one pod, 6 of 38 requests over the
    SLO after nine idle minutes, read 3.9x over 4 ticks and 3.2x over "20", and started the playbook; the
    clock, one sample short of speaking, read 1.03x)."""
    return sum(history[-ticks:]) / ticks / budget if ticks > 0 and budget > 0 else 0.0


def check(
    spec: InferenceSpec,
    obs: Observations,
    forecast: Forecast | None,
    health: Health,
    queue_history: tuple[float, ...],
    ratio_history: tuple[float, ...],
    burn_history: tuple[float, ...],
    now: float,
    params: EngineParams,
    slow_history: tuple[float, ...] = (),
) -> TriggerCheck:
    """Evaluate every trigger for this tick."""
    target = spec.slo.target_latency_ms
    ratio = spec.emergency.trigger_ratio
    q = quantile_label(spec.slo.quantile)
    budget = 1.0 - spec.slo.quantile
    fired: list[Trigger] = []
    cope = not health.explained
    # The symptom is the pods' only if, besides, their device is not at its usual speed per unit of
    # work where their clock can tell: latency worse than the model at a load it says the pods carry,
    # with the device as fast as ever, is the load's too (the knee, a burst inside the step).
    pods = cope and health.pods_changed
    load = (f"{health.per_pod_rps:.1f} rps per pod, within the model's {health.capacity_rps:.1f}"
            if health.per_pod_rps is not None else "no load measured")

    burn = burn_history
    if obs.over_slo_fraction is not None and math.isfinite(obs.over_slo_fraction):
        # Budget burned in an overload (or while its queue drains) is the overload's, answered by
        # scaling: the windows count only what the pods burned while they should have coped.
        burned = min(1.0, max(0.0, obs.over_slo_fraction)) if pods else 0.0
        burn = (burn_history + (burned,))[-params.burn_long_ticks:]
    short, long = _burn(burn, params.burn_short_ticks, budget), _burn(burn, params.burn_long_ticks, budget)
    burning = short >= params.burn_rate and long >= params.burn_rate

    # Beyond the trigger ratio, and beyond the service's own noise (the learning gate's sigmas):
    # a p99 of a few dozen heavy-tailed LLM requests doubles by chance; one of thousands does not.
    line = max(ratio, math.exp(params.gate_sigmas * health.sigma))
    ratios = (ratio_history + (health.ratio if pods else 0.0,))[-max(params.breach_ticks, 2):]
    # Down by the trigger ratio since the last tick: the queue drained at this load. (The factor a
    # trigger needs to call the pods slow is the factor that calls them recovered.)
    draining = len(ratios) >= 2 and ratios[-1] * ratio < ratios[-2]
    # Or the queue fell by the trigger ratio from a backlog past what the model puts in the system at
    # this load (Little's law): the queue an overload left is draining, and the requests finishing
    # now waited in it. (Synthetic bursty trace, seed 1: 347 -> 34 -> 0 queued after a burst, the
    # last step's requests all over the SLO at no load; the burn trigger started the playbook.)
    depths = [p.queue_depth for p in (obs.a, obs.b) if p.queue_depth is not None and math.isfinite(p.queue_depth)]
    depth = float(sum(depths)) if depths else None
    allowed = (obs.rate_rps or 0.0) * health.predicted_ms / 1000.0 if math.isfinite(health.predicted_ms) else math.inf
    if depth is not None and queue_history and queue_history[-1] > max(allowed, params.queue_min_depth):
        draining = draining or depth * ratio < queue_history[-1]
    run = ratios[-params.breach_ticks:] if params.breach_ticks else ()
    held = (len(run) == params.breach_ticks > 0 and all(r > line for r in run)
            and all(b * ratio >= a for a, b in zip(run, run[1:])))
    hurt = health.latency_ms is not None and (health.latency_ms > target or short >= 1.0)
    if held and hurt:
        fired.append(Trigger(DEVIATION, (
            f"a {q} {health.latency_ms:.0f} ms > {line:.1f} x the model's {health.predicted_ms:.0f} ms at {load} "
            f"({len(run)} ticks running){health.clock_text()}")))
    # The device itself, slower per unit of work by the trigger ratio (and past its clock's noise) at the last
    # `breach_ticks` ticks running, users hurt: the pods changed, whatever the load. An overload excuses latency,
    # never this: load does not slow a device per unit of work, and a bigger batch makes it faster per item.
    # Seen on ServeGen m-mid at 10x: a 2.5x slowdown at 95-100% of the model's capacity read 2.50x on the clock
    # from its second tick, while the load (over 1.0 within the window) excused the latency for 105 s.
    device_line = max(ratio, health.clock_line)
    slow_now = health.clock_ratio if health.clock_ratio is not None and health.clock_ratio > device_line else 0.0
    slow = (slow_history + (slow_now,))[-max(params.breach_ticks, 1):]
    if (params.breach_ticks and len(slow) == params.breach_ticks and all(x > 0.0 for x in slow) and hurt):
        fired.append(Trigger(DEVICE, (
            f"the device at {slow_now:.2f}x its usual time per unit of work (> {device_line:.2f}x) for {len(slow)} "
            f"ticks running; a {q} {health.latency_ms:.0f} ms at "
            + (f"{health.per_pod_rps:.1f} rps per pod (the model's capacity {health.capacity_rps:.1f})"
               if health.per_pod_rps is not None else "no load measured"))))
    # Worse than the model by more than its typical noise (one sigma of its log residual): a p99 of
    # LLM requests (sigma ~0.5) is 10% over its prediction by chance at every other tick.
    if params.burn_rate and burning and pods and not draining and health.ratio > math.exp(health.sigma):
        fired.append(Trigger(BURN, (
            f"{100 * burn[-1]:.1f}% of requests over SLO {target:.0f} ms: burn {short:.1f}x the budget over "
            f"{params.burn_short_ticks} ticks and {long:.1f}x over {params.burn_long_ticks}; a {q} "
            f"{health.latency_ms:.0f} ms vs the model's {health.predicted_ms:.0f} ms at {load}{health.clock_text()}")))

    # A's own share: B's errors are not A's pods changing. Over both pools, B's timeouts while it
    # carried an overload shift, 3x slower for 10 minutes (ServeGen m-mid at 10x), read 8.2% and
    # started the playbook on A's healthy pods: int8 on A and 28-30% of the traffic to the slow B.
    err = obs.a.error_rate
    limit = spec.emergency.error_rate_percent / 100.0
    # Errors whose latency is over the target, on a device at its usual speed, while the queue or the
    # latency drains, are timeouts of a burst's queue (latency cut short): load. Without the drain they
    # may be a hung pod, whose requests time out while the others keep the pool's clock normal.
    over = health.latency_ms is not None and health.latency_ms > target
    timeouts = over and not pods and draining
    errors_over = err is not None and err > limit and cope
    if errors_over and not timeouts:
        fired.append(Trigger(ERRORS, f"errors {err * 100:.1f}% > {spec.emergency.error_rate_percent:g}% at {load}"))

    n = params.queue_growth_ticks
    # A gap in the data breaks the run of growth.
    queue = (queue_history + (depth,))[-(n + 1):] if depth is not None else ()
    # A queue that grows while latency is under the target hurts nobody yet: a batching server's
    # queue rises and falls at loads well within its capacity (tested: at 70% of capacity on the
    # Azure replay at 10x, with the p99 at 200 ms of a 1 s SLO, it grew 3 ticks running every few
    # minutes). And one that grows with latency where the model puts it (within one sigma of its
    # noise) is the load's: at 95% of capacity it started the playbook there.
    # And a queue within the in-system count the model allows at this load is the load's (Little's
    # law: rate x latency, the quantile latency bounding the mean): 11 requests queued over 25 pods
    # at 96% of their capacity, on the Azure replay at 10x, started the playbook there.
    if (len(queue) == n + 1 and all(b > a for a, b in zip(queue, queue[1:])) and queue[-1] >= params.queue_min_depth
            and queue[-1] > allowed and pods and hurt and health.ratio > math.exp(health.sigma)):
        fired.append(Trigger(QUEUE, f"queue grew {queue[0]:.0f} -> {queue[-1]:.0f} requests over {n} ticks at {load}"
                                    f"{health.clock_text()}"))

    if forecast is not None:
        upper = np.asarray(forecast.upper(LATENCY_MS), dtype=float)
        over = np.flatnonzero(np.isfinite(upper) & (upper > ratio * target))
        if over.size:
            i = int(over[0])
            lead = float(forecast.step_times()[i] - now)
            fired.append(Trigger(FORECAST, (
                f"forecast {q} upper band {upper[i]:.0f} ms > {float(ratio)} x SLO {target:.0f} ms in {max(lead, 0):.0f} s")))

    note = None
    excused = errors_over and timeouts
    if cope and not pods and hurt and (health.ratio > line or excused):
        errors = f", and {err * 100:.1f}% of its requests timed out behind a draining queue" if excused else ""
        note = (f"A's {q} {health.latency_ms:.0f} ms is {health.ratio:.1f}x the model's {health.predicted_ms:.0f} ms at "
                f"{load}{errors}, but the device runs at {health.clock_ratio:.2f}x its usual time per unit (within "
                f"{health.clock_line:.2f}x): load, answered by pods and B's reserve, not the playbook")
    return TriggerCheck(tuple(fired), queue, health.loads, ratios, burn, health, slow=slow, load_note=note)
