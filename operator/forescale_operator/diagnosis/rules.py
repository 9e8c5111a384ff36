"""The diagnosis checklist, written as data: one `Rule` per cause.

Each rule names the evidence it needs (`needs`: without these it cannot
decide) and the evidence it also reads (`uses`: read when present), its
thresholds (module constants, each with the reason for its value), the
causes it explains when both are suspected (`explains`, used by the ranking),
and a pure check that returns a `Finding`:
- `suspected`: the evidence shows this cause; `score` in [0.5, 1] says how
  far past its threshold (0.5 at the threshold, 1 at twice past it);
- `clear`: the evidence present rules it out;
- `unknown`: the evidence that would decide is missing; `missing` names it.

A check never raises: values are read through `_Read`, which turns None,
NaN, ±inf, negatives and malformed pairs into "missing", and `evaluate`
turns any exception left into `unknown`. Conditions combine in three-valued
logic (True, False, None = cannot tell): a conjunction with one false part
is clear even when another part is missing.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from .evidence import Evidence

SUSPECTED, CLEAR, UNKNOWN = "suspected", "clear", "unknown"
STATUSES = (SUSPECTED, CLEAR, UNKNOWN)

# -- thresholds, each with why it has its value ------------------------------------------------

#: overload: the rate up 30%. A steady service's one-minute rate moves a few percent (Poisson noise at
#: >= 10 rps, slow drift over 10 min); +30% takes a pool at the calibrated ~60% utilisation to ~80%, where queues grow fast.
#: Read per pod where the evidence has it: a rise the forecast's added pods carry is no overload of the pods.
RATE_GROWTH_MIN = 1.3
#: overload: the queue (depth or wait) at least doubled. A healthy batcher drains its queue every batch,
#: so depth and wait hover at a steady level; doubling is growth, not jitter.
QUEUE_GROWTH_MIN = 2.0
#: overload: and at least 4 items waiting. Doubling from 0.5 to 1 item is noise; 4 is past the engine's
#: queue trigger floor (1 item) with room for scrape jitter, and well under one batch (32).
QUEUE_MIN_ITEMS = 4.0
#: overload: or a mean queue wait of at least 10 ms. Below that, doubling is a few ms of batching delay.
QUEUE_WAIT_MIN_MS = 10.0
#: degraded pods: compute per item up 50%. At a steady batch it varies well under 20% minute to minute
#: (batch composition, kernel choice); the benchmark's slowdown fault (2.5x) is far past 1.5x.
COMPUTE_PER_ITEM_GROWTH_MIN = 1.5
#: degraded pods: or the operator's latency model puts the pool's latency at 1.5x what it predicts at the load it
#: carries (its health). The model already accounts for load and precision, where per-item compute cannot see a
#: slowdown that a growing batch amortises; the engine's deviation trigger is 2x. The health moves half-way to each
#: sample's and skips the ticks after an overload, so it can lag: one signal of two. An overload leaves it at 1.
MODEL_HEALTH_MIN = 1.5
#: degraded pods: "at the same batch" means the batch did not shrink below 0.75x. A smaller batch spreads the
#: fixed per-batch cost over fewer items and raises per-item compute by itself (a larger batch lowers it).
BATCH_SHRINK_MIN = 0.75
#: degraded pods: per-item device time under 1.2x before's, at a batch within 0.75-1.25x before's, is a device no
#: slower, whatever the latency model says: the model reads latency, which a queue (an overload, a starved host)
#: raises too. 1.2: at a steady batch per-item compute varies well under 20% (COMPUTE_PER_ITEM_GROWTH_MIN's note);
#: 1.25: a batch that grew more amortises the per-batch cost enough to hide a slowdown, the case the model's health is for.
COMPUTE_FLAT_MAX = 1.2
BATCH_SAME_MAX = 1.25
#: degraded pods, too: per-item device time up COMPUTE_FLAT_MAX or more at a batch grown past BATCH_SAME_MAX. A larger
#: batch spreads the fixed per-batch cost over more items, so a healthy device's per-item time falls as the batch grows
#: (it stays flat only if a batch had no fixed cost); a rise past the steady-batch noise (1.2x) at a larger batch is a
#: slower device, whatever the queue. The rise understates the slowdown: `forescale demo --seed 0` (2.5x at 183 s, the
#: playbook 12.5 s later) read 107 ms (was 83.6, 1.28x) at a batch of 2.75 (was 1.04), where the demo's device takes
#: about 43 ms per item when healthy. No new threshold: the two above, against the amortisation bound.
#: bad pod: one pod's p99 at least 2x the median of the others. Pods of one Deployment run the same image
#: on the same GPU type at an even split; 2x is also the playbook's default triggerRatio.
POD_OUTLIER_RATIO = 2.0
#: bad pod: and at least 50 ms above it. 2x of a few milliseconds is scheduling noise, not a bad pod.
POD_OUTLIER_MIN_MS = 50.0
#: bad pod: at least 2 pods reporting, or there are no "others".
POD_MIN_COUNT = 2
#: bad pod: and its device time per item at least 1.5x the others' median, where the evidence has it. A p99 is a
#: tail: the first pod to catch a pool-wide slowdown, or one unlucky queue, sits 2x out for seconds. A bad device
#: costs 2x and more per item; a pod that only queued longer runs larger batches, which cost less per item.
POD_DEVICE_RATIO = 1.5
#: cache failure: a hit ratio down by 0.15 (absolute). One-minute hit ratios move by a few hundredths at steady
#: traffic; 0.15 is several times that and sends >= 15% more items to the device.
HIT_RATIO_DROP_MIN = 0.15
#: cache failure: KV blocks 95% used. Past this, new sequences wait for blocks or preempt others
#: (vLLM preempts when blocks run out; its default memory budget is 0.9 of the device).
KV_USED_MAX = 0.95
#: cache failure: KV fragmentation at least 0.25. A paged allocator wastes at most one partly filled block per
#: sequence, a few percent (vLLM paper: under 4%); a quarter is blocks held and not used.
KV_FRAGMENTATION_MAX = 0.25
#: cache failure: and up by at least 0.1 from before, so a server that always runs fragmented is not news.
KV_FRAGMENTATION_RISE_MIN = 0.1
#: memory pressure: any container OOMKilled in the window. An OOM kill is memory pressure by definition.
OOM_KILLS_MIN = 1.0
#: memory pressure: any container restarted in the window. A serving container restarts for memory (OOM,
#: allocator failure) far more often than for anything else; without an OOM kill it scores lower.
RESTARTS_MIN = 1.0
#: memory pressure: an out-of-memory warning in the last minute. A refused allocation is memory pressure by
#: definition; 0.5, not 1, because increase() over a scrape-sampled window can read one warning as a little under 1.
OOM_WARNINGS_MIN = 0.5
#: memory pressure: device memory up 20% on one pod. A warmed-up server's allocation is flat (weights, a fixed
#: KV pool, the caching allocator's pool); 20% growth is a leak or fragmentation, not traffic.
GPU_MEMORY_GROWTH_MIN = 1.2
#: rollout: a new revision in the last 15 minutes (the issue's window). A rollout's effects (cold caches, new
#: code, warm-up) show within minutes, and a Deployment's default progress deadline is 600 s.
ROLLOUT_WINDOW_SECONDS = 900.0
#: request mix: mean input (or output) tokens up 30%. An encoder's cost grows at least linearly with the
#: padded length, so +30% is +30% compute per item; a stable service's mean length moves under 10% a minute.
TOKENS_GROWTH_MIN = 1.3


# -- records -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One rule's verdict, with the numbers behind it."""

    cause: str
    status: str
    #: 0 unless suspected; then 0.5 at the threshold up to 1 at twice past it
    score: float = 0.0
    #: the numbers, e.g. "rate 210 rps (was 100); queue 40 items (was 2)"
    summary: str = ""
    #: evidence fields (or `field.now` / `field.before`) that were missing
    missing: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"cause": self.cause, "status": self.status, "score": round(self.score, 3),
                "summary": self.summary, "missing": list(self.missing)}


@dataclass(frozen=True)
class Rule:
    """One cause on the checklist."""

    #: the cause's name (docs/diagnosis.md)
    cause: str
    #: how SREs read it
    title: str
    #: evidence without which the rule cannot decide
    needs: tuple[str, ...]
    #: evidence also read when present
    uses: tuple[str, ...]
    #: the thresholds it applies, by constant name
    thresholds: Mapping[str, float]
    #: causes this one explains: when both are suspected, this one ranks first
    explains: tuple[str, ...]
    check: Callable[[Evidence], Finding] = field(repr=False)


def evaluate(rule: Rule, evidence: Evidence) -> Finding:
    """The rule's finding; `unknown` (never an exception) when its check fails."""
    try:
        finding = rule.check(evidence)
    except Exception as exc:  # noqa: BLE001 - a diagnosis must never stop the playbook
        return Finding(rule.cause, UNKNOWN, summary=f"rule failed: {type(exc).__name__}: {exc}"[:300])
    if finding.status not in STATUSES or not math.isfinite(finding.score):
        return Finding(rule.cause, UNKNOWN, summary=f"rule returned an invalid finding: {finding.status!r}")
    return finding


# -- reading evidence --------------------------------------------------------------------------


def clean(value: Any) -> float | None:
    """A usable reading, or None: NaN, ±inf, negatives, bools and non-numbers are missing."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and value >= 0 else None


class _Read:
    """Reads an Evidence's fields cleaned, and remembers which were missing."""

    def __init__(self, evidence: Evidence) -> None:
        self._ev = evidence
        self.missing: list[str] = []

    def _raw(self, name: str) -> Any:
        return getattr(self._ev, name, None)

    def _split(self, name: str) -> tuple[float | None, float | None, bool]:
        raw = self._raw(name)
        if not isinstance(raw, (list, tuple)) or len(raw) != 2:
            return None, None, False
        return clean(raw[0]), clean(raw[1]), True

    def pair(self, name: str) -> tuple[float, float] | None:
        """(now, before), both usable, or None (recording which side was missing)."""
        now, before, _ = self._split(name)
        if now is None and before is None:
            self.missing.append(name)
        elif now is None:
            self.missing.append(f"{name}.now")
        elif before is None:
            self.missing.append(f"{name}.before")
        else:
            return now, before
        return None

    def now(self, name: str) -> float | None:
        """Only the current side of a pair."""
        now, _, shaped = self._split(name)
        if now is None:
            self.missing.append(f"{name}.now" if shaped and clean(self._raw(name)[1]) is not None else name)
        return now

    def value(self, name: str) -> float | None:
        value = clean(self._raw(name))
        if value is None:
            self.missing.append(name)
        return value

    def flag(self, name: str) -> bool | None:
        value = self._raw(name)
        if not isinstance(value, bool):
            self.missing.append(name)
            return None
        return value

    def pods(self, name: str) -> dict[str, float]:
        raw = self._raw(name)
        if not isinstance(raw, Mapping):
            self.missing.append(name)
            return {}
        pods = {str(k): v for k, v in ((k, clean(v)) for k, v in raw.items()) if v is not None}
        return pods

    def finding(self, cause: str, verdict: bool | None, score: float, parts: Iterable[str]) -> Finding:
        status = SUSPECTED if verdict else (CLEAR if verdict is False else UNKNOWN)
        text = "; ".join(p for p in parts if p)
        if status == UNKNOWN:
            said = "missing " + ", ".join(self.missing) if self.missing else "cannot tell"
            text = f"{text}; {said}" if text else said
        return Finding(cause, status, round(score, 3) if status == SUSPECTED else 0.0, text, tuple(self.missing))


# -- three-valued logic and small helpers -------------------------------------------------------


def _all(*values: bool | None) -> bool | None:
    """Kleene AND: False if any is False, True if all are True, else None."""
    if any(v is False for v in values):
        return False
    return True if all(v is True for v in values) else None


def _either(*values: bool | None) -> bool | None:
    """Two ways to tell the same thing: True if any is True, else False if any is False, else None."""
    if any(v is True for v in values):
        return True
    return False if any(v is False for v in values) else None


def _any(*values: bool | None) -> bool | None:
    """Kleene OR: True if any is True, False if all are False, else None."""
    if any(v is True for v in values):
        return True
    return False if all(v is False for v in values) else None


def _growth(pair: tuple[float, float]) -> float:
    """now / before; a rise from 0 is infinite growth, 0 to 0 none."""
    now, before = pair
    if before > 0:
        return now / before
    return math.inf if now > 0 else 1.0


def _past(value: float, threshold: float) -> float:
    """0.5 at the threshold, rising to 1 at twice past it (log scale)."""
    if threshold <= 0 or value < threshold:
        return 0.0
    if math.isinf(value):
        return 1.0
    return 0.5 + 0.5 * min(1.0, math.log(value / threshold) / math.log(2.0))


def _past_share(value: float, threshold: float) -> float:
    """For a share bounded by 1: 0.5 at the threshold, rising linearly to 1 at 1."""
    if value < threshold:
        return 0.0
    return 1.0 if threshold >= 1 else 0.5 + 0.5 * min(1.0, (value - threshold) / (1.0 - threshold))


def fmt(value: float) -> str:
    """A number as an SRE reads it: 210, 97.3, 0.41, 5."""
    if math.isinf(value):
        return "inf"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.2f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _was(label: str, pair: tuple[float, float], unit: str = "") -> str:
    unit = f" {unit}" if unit else ""
    return f"{label} {fmt(pair[0])}{unit} (was {fmt(pair[1])})"


def _pct(value: float) -> str:
    return f"{value * 100:.0f}%"


def _window(ev: Evidence) -> str:
    """The "now" window as a message says it: `10 s`, `minute` (the default 60 s), or `window` when unknown."""
    seconds = clean(getattr(ev, "now_seconds", None))
    if not seconds:
        return "window"
    return "minute" if seconds == 60 else f"{fmt(seconds)} s"


def _gib(value: float) -> str:
    return f"{value / 2**30:.1f} GiB"


# -- the checks ---------------------------------------------------------------------------------


def check_overload(ev: Evidence) -> Finding:
    """Queue growth with the rate up."""
    r = _Read(ev)
    rate, queue, wait = r.pair("rate_rps"), r.pair("queue_depth"), r.pair("queue_wait_ms")
    per_pod = r.pair("rate_per_pod_rps")
    util = r.now("gpu_utilisation_ratio")
    load = per_pod or rate
    rate_up = None if load is None else _growth(load) >= RATE_GROWTH_MIN
    depth_up = None if queue is None else queue[0] >= max(QUEUE_MIN_ITEMS, QUEUE_GROWTH_MIN * queue[1])
    wait_up = False if wait is None else wait[0] >= max(QUEUE_WAIT_MIN_MS, QUEUE_GROWTH_MIN * wait[1])
    verdict = _all(rate_up, _any(depth_up, wait_up))
    score = 0.0
    if verdict:
        queue_score = max(_past(_growth(queue), QUEUE_GROWTH_MIN) if depth_up else 0.0,
                          _past(_growth(wait), QUEUE_GROWTH_MIN) if wait_up else 0.0)
        score = min(_past(_growth(load), RATE_GROWTH_MIN), queue_score)
    parts = [_was("rate", rate, "rps") if rate else "", _was("per pod", per_pod, "rps") if per_pod else "",
             _was("queue", queue, "items") if queue else "",
             _was("queue wait", wait, "ms") if wait else "", f"GPU {_pct(min(util, 1.0))} busy" if util is not None else ""]
    return r.finding("overload", verdict, score, parts)


def check_degraded_pods(ev: Evidence) -> Finding:
    """Compute per item up at the same batch size."""
    r = _Read(ev)
    per_item, batch = r.pair("compute_per_item_ms"), r.pair("batch_size_mean")
    health = r.value("model_health")
    up = None if per_item is None else _growth(per_item) >= COMPUTE_PER_ITEM_GROWTH_MIN
    same_batch = None if batch is None else (batch[1] == 0 or batch[0] >= BATCH_SHRINK_MIN * batch[1])
    by_same_batch = _all(up, same_batch)
    # the batch grew, and per-item compute rose anyway: a healthy device's would have fallen
    grew = None if batch is None else batch[1] > 0 and batch[0] > BATCH_SAME_MAX * batch[1]
    rose = None if per_item is None else _growth(per_item) >= COMPUTE_FLAT_MAX
    by_larger_batch = _all(grew, rose)
    by_compute = _any(by_same_batch, by_larger_batch)
    # The device no slower per item at about the same batch: the model's "yes" is a queue's latency, not the pods'.
    flat = (per_item is not None and batch is not None and batch[1] > 0 and _growth(per_item) < COMPUTE_FLAT_MAX
            and BATCH_SHRINK_MIN * batch[1] <= batch[0] <= BATCH_SAME_MAX * batch[1])
    by_model = None if health is None else health >= MODEL_HEALTH_MIN and not flat
    # Either shows it; and where per-item compute cannot tell (its evidence missing), the model's "no" decides.
    verdict = _either(by_compute, by_model)
    score = max(_past(_growth(per_item), COMPUTE_PER_ITEM_GROWTH_MIN) if by_same_batch else 0.0,
                _past(_growth(per_item), COMPUTE_FLAT_MAX) if by_larger_batch else 0.0,
                _past(health, MODEL_HEALTH_MIN) if by_model else 0.0)
    parts = [_was("compute per item", per_item, "ms") if per_item else "",
             _was("batch", batch, "items") if batch else "",
             f"latency {fmt(health)}x the latency model's at this load" if health is not None else ""]
    if same_batch is False:
        parts.append("the batch shrank, so per-item compute is not comparable")
    if by_larger_batch and not by_same_batch:
        parts.append("per-item compute rose at a larger batch, where a healthy device's falls")
    if flat and health is not None and health >= MODEL_HEALTH_MIN:
        parts.append("the device is no slower per item at the same batch, so the latency is a queue's")
    return r.finding("degraded-pods", verdict, score, parts)


def check_bad_pod(ev: Evidence) -> Finding:
    """One pod's p99 far from the others'."""
    r = _Read(ev)
    pods = r.pods("pod_p99_ms")
    if len(pods) < POD_MIN_COUNT:
        if "pod_p99_ms" not in r.missing:
            r.missing.append("pod_p99_ms")
        return r.finding("bad-pod", None, 0.0, [f"{len(pods)} pod(s) reported a p99; need {POD_MIN_COUNT}"])
    ranked = sorted(pods.items(), key=lambda kv: kv[1], reverse=True)
    (worst, worst_ms), others = ranked[0], [ms for _, ms in ranked[1:]]
    median = statistics.median(others)
    second = others[0]
    ratio = worst_ms / median if median > 0 else math.inf
    far = ratio >= POD_OUTLIER_RATIO and worst_ms - median >= POD_OUTLIER_MIN_MS
    alone = second < POD_OUTLIER_RATIO * median if median > 0 else second == 0
    device = _device_ratio(ev, worst)
    if device is None:
        r.missing.append("pod_compute_per_item_ms")
    slow_device = True if device is None else device >= POD_DEVICE_RATIO
    verdict = far and alone and slow_device
    score = _past(ratio, POD_OUTLIER_RATIO) if verdict else 0.0
    text = f"pod {worst} p99 {fmt(worst_ms)} ms vs {fmt(median)} ms median of the other {len(others)}"
    if device is not None:
        text += f", {fmt(device)}x their device time per item"
    if far and not alone:
        text += "; more than one pod is slow"
    elif far and not slow_device:
        text += "; its device is not slower, so the p99 is a queue, not the pod"
    return r.finding("bad-pod", verdict, score, [text])


def _device_ratio(ev: Evidence, pod: str) -> float | None:
    """`pod`'s device time per item over the others' median; None when not known for it and another pod."""
    raw = getattr(ev, "pod_compute_per_item_ms", None)
    if not isinstance(raw, Mapping):
        return None
    pods = {str(k): v for k, v in ((k, clean(v)) for k, v in raw.items()) if v is not None}
    others = [ms for name, ms in pods.items() if name != pod]
    if pod not in pods or not others:
        return None
    median = statistics.median(others)
    return pods[pod] / median if median > 0 else math.inf


def check_cache_failure(ev: Evidence) -> Finding:
    """A hit ratio fell, or KV usage or fragmentation rose."""
    r = _Read(ev)
    kv_used, frag = r.now("kv_used_ratio"), r.pair("kv_fragmentation_ratio")
    kv_hit, hit = r.pair("kv_hit_ratio"), r.pair("result_cache_hit_ratio")
    signals = {
        "kv_used": None if kv_used is None else kv_used >= KV_USED_MAX,
        "frag": None if frag is None else frag[0] >= KV_FRAGMENTATION_MAX and frag[0] - frag[1] >= KV_FRAGMENTATION_RISE_MIN,
        "kv_hit": None if kv_hit is None else kv_hit[1] - kv_hit[0] >= HIT_RATIO_DROP_MIN,
        "hit": None if hit is None else hit[1] - hit[0] >= HIT_RATIO_DROP_MIN,
    }
    present = [v for v in signals.values() if v is not None]
    # Any one signal present decides: a server without a KV cache (an encoder) has no KV series at all.
    verdict = _any(*present) if present else None
    scores = [
        _past_share(kv_used, KV_USED_MAX) if signals["kv_used"] else 0.0,
        _past_share(frag[0], KV_FRAGMENTATION_MAX) if signals["frag"] else 0.0,
        _past((kv_hit[1] - kv_hit[0]) / HIT_RATIO_DROP_MIN, 1.0) if signals["kv_hit"] else 0.0,
        _past((hit[1] - hit[0]) / HIT_RATIO_DROP_MIN, 1.0) if signals["hit"] else 0.0,
    ]
    kv = [f"kv cache {_pct(kv_used)} used" if kv_used is not None else "",
          f"fragmentation {fmt(frag[0])} (was {fmt(frag[1])})" if frag else "",
          _was("kv hit rate", kv_hit) if kv_hit else ""]
    parts = [", ".join(p for p in kv if p), _was("hit rate", hit) if hit else ""]
    return r.finding("cache-failure", verdict, max(scores), parts)


def check_memory_pressure(ev: Evidence) -> Finding:
    """OOM kills, restarts, out-of-memory warnings, or device memory growing."""
    r = _Read(ev)
    ooms, restarts = r.value("oom_killed_containers"), r.value("restarted_containers")
    memory = r.pair("gpu_memory_bytes")
    warnings = r.value("oom_warnings")
    oom = None if ooms is None else ooms >= OOM_KILLS_MIN
    restarted = None if restarts is None else restarts >= RESTARTS_MIN
    grown = False if memory is None else _growth(memory) >= GPU_MEMORY_GROWTH_MIN
    warned = warnings is not None and warnings >= OOM_WARNINGS_MIN
    verdict = _any(oom, restarted, grown, warned)
    scores = [1.0 if oom or warned else 0.0, _past(restarts, RESTARTS_MIN) if restarted else 0.0,
              _past(_growth(memory), GPU_MEMORY_GROWTH_MIN) if grown else 0.0]
    parts = [f"{fmt(ooms)} container(s) OOMKilled" if ooms is not None else "",
             f"{fmt(restarts)} restart(s)" if restarts is not None else "",
             f"{fmt(warnings)} out-of-memory warning(s) in the last {_window(ev)}" if warned else "",
             f"GPU memory {_gib(memory[0])} (was {_gib(memory[1])})" if memory else ""]
    return r.finding("memory-pressure", verdict, max(scores), parts)


def check_rollout(ev: Evidence) -> Finding:
    """A new Deployment revision in the last 15 minutes."""
    r = _Read(ev)
    changed = r.flag("revision_changed")
    age = r.value("revision_age_seconds") if changed else None
    recent = None if age is None else age <= ROLLOUT_WINDOW_SECONDS
    verdict = _all(changed, recent)
    score = 1.0 - 0.5 * (age / ROLLOUT_WINDOW_SECONDS) if verdict else 0.0
    if changed and age is not None:
        text = f"new revision {fmt(age / 60)} min ago"
    elif changed is False:
        text = "no new revision"
    else:
        text = ""
    return r.finding("rollout", verdict, score, [text])


def check_request_mix(ev: Evidence) -> Finding:
    """Longer inputs (or outputs) than before."""
    r = _Read(ev)
    inputs, outputs = r.pair("input_tokens_mean"), r.pair("output_tokens_mean")
    longer_in = None if inputs is None else _growth(inputs) >= TOKENS_GROWTH_MIN
    longer_out = False if outputs is None else _growth(outputs) >= TOKENS_GROWTH_MIN
    verdict = _any(longer_in, longer_out)
    score = max(_past(_growth(inputs), TOKENS_GROWTH_MIN) if longer_in else 0.0,
                _past(_growth(outputs), TOKENS_GROWTH_MIN) if longer_out else 0.0)
    parts = [_was("input", inputs, "tokens") if inputs else "", _was("output", outputs, "tokens") if outputs else ""]
    return r.finding("request-mix", verdict, score, parts)


# -- the checklist ------------------------------------------------------------------------------

RULES: tuple[Rule, ...] = (
    Rule("overload", "Overload", needs=("rate_rps", "queue_depth"),
         uses=("rate_per_pod_rps", "queue_wait_ms", "gpu_utilisation_ratio"),
         thresholds={"RATE_GROWTH_MIN": RATE_GROWTH_MIN, "QUEUE_GROWTH_MIN": QUEUE_GROWTH_MIN,
                     "QUEUE_MIN_ITEMS": QUEUE_MIN_ITEMS, "QUEUE_WAIT_MIN_MS": QUEUE_WAIT_MIN_MS},
         explains=("cache-failure",), check=check_overload),
    Rule("degraded-pods", "Degraded pods", needs=("compute_per_item_ms", "batch_size_mean"), uses=("model_health",),
         thresholds={"COMPUTE_PER_ITEM_GROWTH_MIN": COMPUTE_PER_ITEM_GROWTH_MIN, "BATCH_SHRINK_MIN": BATCH_SHRINK_MIN,
                     "MODEL_HEALTH_MIN": MODEL_HEALTH_MIN, "COMPUTE_FLAT_MAX": COMPUTE_FLAT_MAX,
                     "BATCH_SAME_MAX": BATCH_SAME_MAX},
         # slower items make the same load queue; more load never makes items slower (larger batches, cheaper items)
         explains=("overload",), check=check_degraded_pods),
    Rule("bad-pod", "One bad pod", needs=("pod_p99_ms",), uses=("pod_compute_per_item_ms",),
         thresholds={"POD_OUTLIER_RATIO": POD_OUTLIER_RATIO, "POD_OUTLIER_MIN_MS": POD_OUTLIER_MIN_MS,
                     "POD_MIN_COUNT": POD_MIN_COUNT, "POD_DEVICE_RATIO": POD_DEVICE_RATIO},
         explains=("degraded-pods",), check=check_bad_pod),
    Rule("cache-failure", "Cache failure", needs=(),
         uses=("result_cache_hit_ratio", "kv_used_ratio", "kv_fragmentation_ratio", "kv_hit_ratio"),
         thresholds={"HIT_RATIO_DROP_MIN": HIT_RATIO_DROP_MIN, "KV_USED_MAX": KV_USED_MAX,
                     "KV_FRAGMENTATION_MAX": KV_FRAGMENTATION_MAX, "KV_FRAGMENTATION_RISE_MIN": KV_FRAGMENTATION_RISE_MIN},
         explains=("degraded-pods",), check=check_cache_failure),
    Rule("memory-pressure", "Memory pressure", needs=("oom_killed_containers", "restarted_containers"),
         uses=("gpu_memory_bytes", "oom_warnings"),
         thresholds={"OOM_KILLS_MIN": OOM_KILLS_MIN, "RESTARTS_MIN": RESTARTS_MIN, "OOM_WARNINGS_MIN": OOM_WARNINGS_MIN,
                     "GPU_MEMORY_GROWTH_MIN": GPU_MEMORY_GROWTH_MIN},
         explains=("bad-pod", "cache-failure", "degraded-pods"), check=check_memory_pressure),
    Rule("rollout", "Rollout", needs=("revision_changed", "revision_age_seconds"), uses=(),
         thresholds={"ROLLOUT_WINDOW_SECONDS": ROLLOUT_WINDOW_SECONDS},
         explains=("degraded-pods", "bad-pod", "cache-failure", "memory-pressure"), check=check_rollout),
    Rule("request-mix", "Request mix changed", needs=("input_tokens_mean",), uses=("output_tokens_mean",),
         thresholds={"TOKENS_GROWTH_MIN": TOKENS_GROWTH_MIN},
         explains=("degraded-pods", "cache-failure"), check=check_request_mix),
)

CAUSES = tuple(rule.cause for rule in RULES)
