"""The diagnosis campaign's machinery (bench/diagnosis.py prints and scores it; tests/bench runs a short form).

One demo stack (`DemoStack`: the real operator, a real Prometheus, model servers in emulated-GPU mode, the
emulated API, pod runner and gateway), shared by every incident. Each incident gets an InferenceDeployment of
its own, created for it and deleted after it: its series are fresh, so no earlier incident's after-effects
(an int8 pool, a cold cache, a cut-back in progress) reach its "before" window, and nothing has to be reset.
`lanes` incidents run side by side.

One incident, in order:
1. apply the resource (`campaign_resource`), wait for pool A's pods, start its gateway and an open-loop
   Poisson load through it (seeded; a share of the inputs repeats, so the result cache carries load);
2. the baseline: a warm-up, then the diagnosis's "before" and "now" windows of healthy traffic; a relief
   started in it (EmergencyStarted, Overload) is a false start, recorded;
3. inject the cause (`inject`, seeded magnitude);
4. wait for the relief to start (EmergencyStarted, or Overload) and for the diagnosis (`status.diagnosis`
   written after it); read the top cause, the RootCauseSuspected event and, at an incident, the snapshot's
   diagnosis and the bad pod's deletion;
5. control runs inject nothing, wait as long, and run the same checklist on demand at the end.

Everything the operator says is read through the API (events, status, ConfigMaps), as an SRE would.
"""

from __future__ import annotations

import asyncio
import copy
import random
import time
import urllib.error
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from forescale_devcluster.demo_scenario import DemoSettings, demo_resource
from forescale_devcluster.demo_stack import DemoStack, StackSettings, wait_until
from forescale_devcluster.loadgen import InputSampler, LoadGenerator
from forescale_operator.admin_client import pod_endpoint, pod_is_ready
from forescale_operator.diagnosis import LOOK_AGAIN
from forescale_operator.kube.timestamps import epoch_seconds

CAUSES = ("overload", "degraded-pods", "bad-pod", "cache-failure", "memory-pressure", "rollout", "request-mix")
CONTROL = "control"
#: short names for resource names (`dx07-mem`); a name ending in -a or -b would be Invalid
_SHORT = {"overload": "over", "degraded-pods": "degr", "bad-pod": "badpod", "cache-failure": "cache",
          "memory-pressure": "mem", "rollout": "roll", "request-mix": "mix", CONTROL: "ctl"}
API = "forescale.io/v1alpha1"
RELIEF = ("EmergencyStarted", "Overload")


@dataclass(frozen=True)
class Timing:
    """The campaign's clock. Compressed against production (15 s ticks, 60 s against 600 s) to fit two cores."""

    #: the operator's loop interval (forecast.stepSeconds)
    step_seconds: int = 5
    #: Prometheus scrape interval
    scrape_seconds: float = 1.0
    #: the diagnosis's windows (FORESCALE_DIAGNOSIS_NOW_SECONDS / _BEFORE_SECONDS)
    now_seconds: int = 10
    before_seconds: int = 60
    #: healthy load before the "before" window starts: caches fill, the latency model learns
    warmup_seconds: float = 25.0
    #: the load ramps up over this many seconds of the warm-up (a cold cache at full load is an incident of its own)
    ramp_seconds: float = 15.0
    #: how long a relief may take to start after the injection
    detect_seconds: float = 90.0
    #: how long the diagnosis may take after the relief starts (the goal is 60 s; this only bounds the wait)
    diagnose_seconds: float = 90.0
    #: a control run's wait after its baseline, as long as an incident's detection typically takes and more
    control_seconds: float = 30.0
    #: emulated model-load time of a pod: long enough that added pods cannot absorb an overload at once
    startup_seconds: float = 10.0

    @property
    def baseline_seconds(self) -> float:
        return self.warmup_seconds + self.before_seconds + self.now_seconds


@dataclass(frozen=True)
class Load:
    """The traffic of one incident's resource: per A pod, with this share of repeated inputs."""

    #: offered requests per second per pool-A pod
    rate_per_pod: float = 11.0
    #: share of inputs drawn from a hot set (the result cache's hits)
    repeat_fraction: float = 0.62
    hot_set_size: int = 40
    #: pool A's pods (minReplicas); the bad-pod remedy needs two ready
    a_pods: int = 2
    #: the SLO target, ms (p99)
    slo_ms: float = 400.0
    #: every pod's server options: one item per batch, so a pod's device saturates near 11.6 items/s
    server_args: str = "--max-batch 1"
    #: the forescale.io/capacity-rps annotation: per-pod capacity an SRE measured (so the baseline is no overload)
    capacity_rps: float = 20.0
    #: the emulated-GPU profile every pod serves (forescale_profiles.service_time)
    profile: str = "demo-heavy"
    #: None: an encoder, sent embeddings; a number: a decoder, sent completions of this many tokens. A decoder's
    #: cache failure is its KV cache leaking (`kv_fragmentation`), an encoder's its result cache stopping
    max_tokens: int | None = None
    #: a decoder's cache failure leaves this many KV blocks free, at least and at most (seeded)
    kv_blocks_left: tuple[int, int] = (2, 3)

    @property
    def decoder(self) -> bool:
        return self.max_tokens is not None


#: `--kv-cache`: OPT-13B on an emulated A100-80GB (3,914 KV blocks of 16 tokens), sent completions of 16 tokens.
#: A pod runs a batch of 16-token completions in ~340 ms (batch 1) to ~400 ms (batch 32), so the SLO is 1.5 s;
#: 30% repeated inputs, so the device carries most of the load (a KV leak then halts most requests, not a few).
KV_LOAD = Load(profile="a100-opt-13b", max_tokens=16, server_args="", slo_ms=1500.0, capacity_rps=30.0,
               repeat_fraction=0.3)


@dataclass(frozen=True)
class Incident:
    index: int
    cause: str
    seed: int

    @property
    def name(self) -> str:
        return f"dx{self.index:02d}-{_SHORT[self.cause]}"


@dataclass
class Outcome:
    """What one incident (or control run) showed."""

    incident: Incident
    #: what was injected, with its seeded magnitude
    injected: dict[str, Any] = field(default_factory=dict)
    #: EmergencyStarted or Overload (the first after the injection), or None
    trigger: str | None = None
    #: seconds from the injection to the relief's start (the trigger event's timestamp)
    detect_s: float | None = None
    #: status.diagnosis.top, or None when nothing was suspected (or no diagnosis ran)
    top: str | None = None
    #: the causes ranked suspected, in order
    suspected: list[str] = field(default_factory=list)
    #: every finding of status.diagnosis: "cause status score: summary"
    findings: list[str] = field(default_factory=list)
    #: seconds from the trigger event to RootCauseSuspected (event timestamps, 1 s resolution)
    latency_s: float | None = None
    #: the same, as this campaign saw it (polling every 0.5 s): an upper bound with sub-second resolution
    observed_latency_s: float | None = None
    message: str = ""
    #: RootCauseSuspected events posted (a control run must have none)
    root_cause_events: int = 0
    #: relief started during the baseline (before any injection)
    false_starts: list[str] = field(default_factory=list)
    #: control runs: the checklist run on demand at the end
    on_demand_top: str | None = None
    on_demand_suspected: list[str] = field(default_factory=list)
    #: bad-pod incidents: the BadPodDeleted event's message, or "" when none was posted
    bad_pod_deleted: str = ""
    #: the pod slowed down (bad-pod), for checking the deletion named it
    slowed_pod: str = ""
    #: at an EmergencyStarted: the keys of the incident snapshot ConfigMap's data
    snapshot_keys: list[str] = field(default_factory=list)
    #: why the run says nothing about the diagnosis (the relief never started, a step failed)
    problem: str = ""
    events: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["incident"] = {**asdict(self.incident), "name": self.incident.name}
        return out


def event_time(posted: list[dict[str, Any]], trigger_at: float, top: str | None) -> float | None:
    """When the RootCauseSuspected that answers the relief was posted: the first after the relief that names the
    top cause (a second look's, when it named a new one), else the first after the relief, else the last. Not
    simply the last: a relief repeated after the diagnosis ended starts another one, seconds later."""
    after = [e for e in posted if (epoch_seconds(e.get("firstTimestamp")) or 0) >= int(trigger_at)]
    naming = [e for e in after if top and f"({top}):" in (e.get("message") or "")]
    chosen = (naming or after or posted[-1:] or [{}])[0]
    return epoch_seconds(chosen.get("firstTimestamp"))


def plan(per_cause: int, controls: int, seed: int, causes: tuple[str, ...] = CAUSES) -> list[Incident]:
    """`per_cause` incidents of each cause and `controls` control runs, interleaved (round by round)."""
    out: list[Incident] = []
    rounds = max(per_cause, controls)
    for r in range(rounds):
        kinds = [c for c in causes if r < per_cause] + ([CONTROL] if r < controls else [])
        for cause in kinds:
            out.append(Incident(len(out), cause, seed + r))
    return out


def campaign_resource(incident: Incident, timing: Timing, load: Load, namespace: str) -> dict[str, Any]:
    """The demo's InferenceDeployment with the campaign's pool sizes, SLO, loop interval and capacity."""
    settings = DemoSettings(name=incident.name, step_seconds=timing.step_seconds, slo_ms=load.slo_ms,
                            cutback_interval_seconds=5, cutback_stable_seconds=10, startup_seconds=timing.startup_seconds)
    body = demo_resource(settings, namespace)
    body["metadata"]["annotations"] = {"forescale.io/capacity-rps": f"{load.capacity_rps:g}"}
    pools = body["spec"]["pools"]
    pools["a"].update(minReplicas=load.a_pods, maxReplicas=load.a_pods + 3)
    pools["b"].update(minReplicas=1, maxReplicas=2)
    return body


def stack_settings(timing: Timing, load: Load, workdir: str | None, lanes: int) -> StackSettings:
    return StackSettings(startup_seconds=timing.startup_seconds, scrape_seconds=timing.scrape_seconds, workdir=workdir,
                         max_pods=12 * lanes + 8, server_args=load.server_args, profile=load.profile,
                         operator_env={"FORESCALE_DIAGNOSIS_NOW_SECONDS": str(timing.now_seconds),
                                       "FORESCALE_DIAGNOSIS_BEFORE_SECONDS": str(timing.before_seconds)})


class Lane:
    """Runs incidents one after another on the shared stack; `log` gets one line per step."""

    def __init__(self, stack: DemoStack, timing: Timing, load: Load, log: Callable[[str], None]) -> None:
        self.stack, self.timing, self.load, self.log = stack, timing, load, log

    async def _call(self, fn, *args, **kwargs):
        return await asyncio.to_thread(fn, *args, **kwargs)

    # -- reading the operator, as an SRE would ----------------------------------------------------

    def _events(self, name: str) -> list[dict[str, Any]]:
        return self.stack.events(name)

    def _status(self, name: str) -> dict[str, Any]:
        return (self.stack.infd(name) or {}).get("status") or {}

    def _a_pods(self, name: str) -> list[dict[str, Any]]:
        return [p for p in self.stack.pods("a", name) if not p["metadata"].get("deletionTimestamp")]

    # -- one incident ---------------------------------------------------------------------------

    async def run(self, incident: Incident) -> Outcome:
        started = time.monotonic()
        outcome = Outcome(incident)
        name, stack = incident.name, self.stack
        gateway = f"gw-{name}"
        gen: LoadGenerator | None = None
        load_task: asyncio.Task | None = None
        injector: Injector | None = None
        try:
            await self._call(stack.apply, campaign_resource(incident, self.timing, self.load, stack.settings.namespace))
            await self._call(wait_until, lambda: len([p for p in self._a_pods(name) if pod_is_ready(p)]) >= self.load.a_pods,
                             90, 0.5, f"{name}: pool a's pods")
            url = await self._call(stack.start_gateway, name, gateway)
            injector = Injector(incident, self)
            rate = injector.rate(self.load.rate_per_pod * self.load.a_pods, self.timing.baseline_seconds,
                                 self.timing.ramp_seconds)
            sampler = InputSampler(incident.seed, repeat_fraction=self.load.repeat_fraction, hot_set_size=self.load.hot_set_size)
            injector.sampler = sampler
            total = self.timing.baseline_seconds + self.timing.detect_seconds + self.timing.diagnose_seconds + 30
            kind = {"path": "/v1/completions", "max_tokens": self.load.max_tokens} if self.load.decoder else {}
            gen = LoadGenerator(url, rate, duration_seconds=total, seed=incident.seed, inputs=sampler,
                                max_concurrency=256, timeout_seconds=10.0, **kind)
            load_task = asyncio.create_task(gen.run())
            while gen.started_at is None:
                await asyncio.sleep(0.05)
            inject_at = gen.started_at + self.timing.baseline_seconds
            await asyncio.sleep(max(0.0, inject_at - time.time()))
            outcome.false_starts = [f"{e['reason']}: {e.get('message', '')[:160]}" for e in await self._call(self._events, name)
                                    if e.get("reason") in RELIEF]
            if incident.cause == CONTROL:
                await self._control(outcome, name)
            else:
                outcome.injected = await injector.start()
                outcome.slowed_pod = injector.slowed_pod
                inject_at = time.time()
                self.log(f"{name}: injected {outcome.injected}")
                await self._follow(outcome, name, inject_at, injector)
        except Exception as exc:  # noqa: BLE001 - one incident's failure is recorded, the campaign goes on
            outcome.problem = outcome.problem or f"{type(exc).__name__}: {exc}"[:300]
        finally:
            outcome.events = [f"{e.get('reason')}: {e.get('message', '')[:200]}" for e in self._safe_events(name)]
            if gen is not None:
                gen.stop()
            if load_task is not None:
                load_task.cancel()
                await asyncio.gather(load_task, return_exceptions=True)
            await self._call(stack.stop_gateway, gateway)
            await self._teardown(name)
            outcome.seconds = round(time.monotonic() - started, 1)
        return outcome

    def _safe_events(self, name: str) -> list[dict[str, Any]]:
        try:
            return self._events(name)
        except (OSError, urllib.error.URLError):
            return []

    async def _teardown(self, name: str) -> None:
        try:
            await self._call(self.stack.delete, API, "inferencedeployments", name)
            await self._call(wait_until, lambda: not self.stack.pods(None, name), 60, 0.5, f"{name}: its pods gone")
        except Exception as exc:  # noqa: BLE001 - the next incident has its own resource
            self.log(f"{name}: teardown: {exc}")

    async def _follow(self, outcome: Outcome, name: str, inject_at: float, injector: "Injector") -> None:
        """After the injection: the relief's start, the diagnosis, its event, the remedy and the snapshot."""
        deadline = time.time() + self.timing.detect_seconds
        trigger = None
        while time.time() < deadline and trigger is None:
            await injector.tick()
            events = await self._call(self._events, name)
            trigger = next((e for e in events if e.get("reason") in RELIEF
                            and (epoch_seconds(e.get("firstTimestamp")) or 0) >= int(inject_at)), None)
            if trigger is None:
                await asyncio.sleep(0.5)
        if trigger is None:
            outcome.problem = f"no EmergencyStarted or Overload within {self.timing.detect_seconds:.0f} s of the injection"
            return
        trigger_at = epoch_seconds(trigger.get("firstTimestamp")) or time.time()
        seen_trigger = time.time()
        outcome.trigger = trigger["reason"]
        outcome.detect_s = round(trigger_at - inject_at, 1)
        self.log(f"{name}: {outcome.trigger} {outcome.detect_s:.0f} s after the injection: {trigger.get('message', '')[:120]}")
        deadline = seen_trigger + self.timing.diagnose_seconds
        diagnosis = None
        while time.time() < deadline:
            await injector.tick()
            diagnosis = (await self._call(self._status, name)).get("diagnosis")
            if diagnosis and (epoch_seconds(diagnosis.get("at")) or 0) >= trigger_at - 2 * self.timing.step_seconds:
                break
            diagnosis = None
            await asyncio.sleep(0.5)
        if diagnosis is None:
            outcome.problem = f"no diagnosis in status within {self.timing.diagnose_seconds:.0f} s of {outcome.trigger}"
            return
        if diagnosis.get("top") in LOOK_AGAIN:
            # the operator looks again one "now" window later and rewrites status.diagnosis when it names a cause
            # that explains this one: wait for it, as long as the window and a tick, before reading the top cause
            first_at = epoch_seconds(diagnosis.get("at")) or 0
            until = time.time() + self.timing.now_seconds + 2 * self.timing.step_seconds
            while time.time() < until:
                await injector.tick()
                later = (await self._call(self._status, name)).get("diagnosis")
                if later and (epoch_seconds(later.get("at")) or 0) > first_at:
                    diagnosis = later
                    break
                await asyncio.sleep(0.5)
        seen_diagnosis = time.time()
        outcome.top = diagnosis.get("top")
        outcome.suspected = [f["cause"] for f in diagnosis.get("findings") or [] if f.get("status") == "suspected"]
        outcome.findings = [f"{f.get('cause')} {f.get('status')} {f.get('score')}: {f.get('summary', '')}"
                            for f in diagnosis.get("findings") or []]
        outcome.message = diagnosis.get("message", "")
        events = await self._call(self._events, name)
        posted = [e for e in events if e.get("reason") == "RootCauseSuspected"]
        outcome.root_cause_events = len(posted)
        if posted:
            outcome.latency_s = round((event_time(posted, trigger_at, outcome.top) or seen_diagnosis) - trigger_at, 1)
            outcome.observed_latency_s = round(seen_diagnosis - seen_trigger, 1)
        self.log(f"{name}: top {outcome.top} (true {outcome.incident.cause}), {outcome.latency_s} s: {outcome.message[:160]}")
        await self._after_diagnosis(outcome, name)

    async def _after_diagnosis(self, outcome: Outcome, name: str) -> None:
        """The remedy (a bad pod's deletion) and, at an incident, the snapshot's diagnosis: both follow the
        event, by a profile's length at most."""
        snapshot = outcome.trigger == "EmergencyStarted"
        deadline = time.time() + 25.0
        while time.time() < deadline:
            if snapshot:
                maps = [c for c in await self._call(self.stack.list, "v1", "configmaps")
                        if c["metadata"]["name"].startswith(f"{name}-incident-")]
                outcome.snapshot_keys = sorted({k for c in maps for k in (c.get("data") or {})})
            deleted = [e for e in await self._call(self._events, name) if e.get("reason") == "BadPodDeleted"]
            outcome.bad_pod_deleted = deleted[0].get("message", "") if deleted else ""
            if (not snapshot or "diagnosis.json" in outcome.snapshot_keys) and (outcome.top != "bad-pod" or deleted):
                return
            await asyncio.sleep(1.0)

    async def _control(self, outcome: Outcome, name: str) -> None:
        """No fault: wait as long as an incident would, then run the checklist on demand."""
        await asyncio.sleep(self.timing.control_seconds)
        events = await self._call(self._events, name)
        outcome.root_cause_events = sum(e.get("reason") == "RootCauseSuspected" for e in events)
        late = [e for e in events if e.get("reason") in RELIEF]
        outcome.trigger = late[0]["reason"] if late else None
        top, suspected = await on_demand_diagnosis(self.stack, name, self.timing)
        outcome.on_demand_top, outcome.on_demand_suspected = top, suspected
        status = await self._call(self._status, name)
        if status.get("diagnosis"):
            outcome.top = status["diagnosis"].get("top")
            outcome.message = status["diagnosis"].get("message", "")
        self.log(f"{name}: control, on demand: top {top}; RootCauseSuspected events {outcome.root_cause_events}")


async def on_demand_diagnosis(stack: DemoStack, name: str, timing: Timing) -> tuple[str | None, list[str]]:
    """`forescale diagnose`'s checklist, in process, over the operator's windows: (top, suspected causes)."""
    from forescale_operator.diagnosis import Windows, diagnose, gather_evidence
    from forescale_operator.kube.http import Connection, HttpKubeApi
    from forescale_operator.readings.kube_facts import read_kube_facts
    from forescale_operator.readings.prom_query import HttpPromQuery

    now = time.time()
    kube = HttpKubeApi(Connection(stack.api_url))
    prom = HttpPromQuery(stack.prometheus.url, timeout_s=10.0, at=now)
    namespace = stack.settings.namespace

    async def facts():
        return await read_kube_facts(kube, namespace, name, "a", now=now, window_seconds=900.0)

    try:
        evidence = await gather_evidence(prom, namespace, name, pool="a", facts=facts, timeout_s=10.0,
                                         windows=Windows(timing.now_seconds, timing.before_seconds))
    finally:
        await prom.close()
        await kube.close()
    found = diagnose(evidence)
    return (found.top.cause if found.top else None), [f.cause for f in found.suspected]


class Injector:
    """One cause, injected for real: the servers' fault API, the resource's template or the load.

    `start` injects (seeded magnitude) and returns what it did; `tick` re-applies a pool-wide fault to pool A
    pods that became ready since (scale-ups, the rollout's new pods), as a pool-wide cause would reach them.
    Nothing is undone: the resource, its pods and their faults go with the incident.
    """

    #: how long a server fault lasts: longer than detection and diagnosis take
    FAULT_SECONDS = 150.0

    def __init__(self, incident: Incident, lane: Lane) -> None:
        self.incident, self.lane = incident, lane
        self.rng = random.Random(f"{incident.cause}-{incident.seed}")
        self.sampler: InputSampler | None = None
        self.body: dict[str, Any] | None = None
        self.targets: Callable[[dict[str, Any]], bool] = lambda pod: True
        self.done: set[str] = set()
        self.started = 0.0
        self.slowed_pod = ""
        #: a decoder's cache failure: the KV blocks each pod is left with, and the blocks leaked per pod
        self.kv_left = 0
        self.leaked: dict[str, int] = {}
        #: the overload's rate factor (1 for the other causes), drawn in `rate`
        self.factor = 1.0

    def rate(self, base: float, step_at: float, ramp: float) -> Callable[[float], float]:
        """The load's rate: up to `base` over `ramp` seconds, stepped up by the overload's factor at `step_at`."""
        self.factor = round(self.rng.uniform(3.0, 4.0), 2) if self.incident.cause == "overload" else 1.0
        return lambda t: base * min(1.0, max(t, 0.5) / ramp) * (self.factor if t >= step_at else 1.0)

    async def start(self) -> dict[str, Any]:
        cause, rng, lane, name = self.incident.cause, self.rng, self.lane, self.incident.name
        self.started = time.time()
        seconds = self.FAULT_SECONDS
        if cause == "overload":
            return {"rate_factor": self.factor}
        if cause == "degraded-pods":
            self.body = {"slowdown": round(rng.uniform(2.5, 4.0), 2), "seconds": seconds}
        elif cause == "bad-pod":
            pods = sorted(p["metadata"]["name"] for p in await lane._call(lane._a_pods, name) if pod_is_ready(p))
            chosen = rng.choice(pods)
            self.body = {"slowdown": round(rng.uniform(4.0, 8.0), 2), "seconds": seconds}
            self.targets = lambda pod: pod["metadata"]["name"] == chosen
            await self.tick()
            self.slowed_pod = chosen
            return {**self.body, "pod": chosen}
        elif cause == "cache-failure" and lane.load.decoder:
            # KV blocks leaked and never given back (one token each: fragmentation), until a few are left
            self.kv_left = rng.randint(*lane.load.kv_blocks_left)
            self.body = {"kv_fragmentation": 1.0}
            await self.tick()
            return {"kv_fragmentation": True, "kv_blocks_left": self.kv_left, "leaked": dict(self.leaked)}
        elif cause == "cache-failure":
            self.body = {"cache_flush": True, "seconds": seconds}
        elif cause == "memory-pressure":
            self.body = {"memory_pressure": round(rng.uniform(0.97, 1.0), 3), "seconds": seconds}
        elif cause == "request-mix":
            assert self.sampler is not None
            self.sampler.scale = round(rng.uniform(20.0, 30.0), 1)
            return {"input_scale": self.sampler.scale}
        elif cause == "rollout":
            slowdown = round(rng.uniform(2.5, 4.0), 2)
            old = {p["metadata"]["labels"].get("pod-template-hash") for p in await lane._call(lane._a_pods, name)}
            await lane._call(self._new_revision)
            self.body = {"slowdown": slowdown, "seconds": seconds}
            # the new revision's pods are the slow ones: only they get the fault
            self.targets = lambda pod: pod["metadata"]["labels"].get("pod-template-hash") not in old
            await self.tick()
            return {"new_revision_slowdown": slowdown}
        await self.tick()
        return dict(self.body or {})

    def _leak_kv(self, url: str) -> int:
        """Leak a pod's KV blocks until `kv_left` are free (the fault takes a share of the pool more each call, as
        far as free blocks last; blocks the running batch held come free after it): the blocks leaked."""
        share, leaked = 0.0, 0  # 0 first: gives back nothing (nothing leaked yet) and says the pool's size
        for _ in range(50):
            faults = (self.lane.stack.admin(url, "/admin/faults", {"kv_fragmentation": share}) or {}).get("faults") or {}
            leaked, total = int(faults.get("kv_leaked_blocks", 0)), int(faults.get("kv_blocks", 0))
            more = total - self.kv_left - leaked
            if total <= 0 or more <= 0:
                break
            share = more / total
            time.sleep(0.05)
        return leaked

    def _new_revision(self) -> None:
        """A new pod template for pool A (a new build's environment), as `kubectl apply` of a new version does."""
        stack, name = self.lane.stack, self.incident.name
        template = copy.deepcopy(stack.infd(name)["spec"]["pools"]["a"]["template"])
        container = template["spec"]["containers"][0]
        container["env"] = [*(container.get("env") or []), {"name": "FORESCALE_BUILD", "value": f"dx-{self.incident.seed}"}]
        stack.patch(API, "inferencedeployments", name, {"spec": {"pools": {"a": {"template": template}}}})

    async def tick(self) -> None:
        """Apply the fault to pool A's ready pods that have not had it, for the time the fault has left."""
        if self.body is None:
            return
        lane, name = self.lane, self.incident.name
        left = self.FAULT_SECONDS - (time.time() - self.started)
        if left < 1.0:
            return
        pods = [p for p in await lane._call(lane._a_pods, name)
                if pod_is_ready(p) and self.targets(p) and p["metadata"]["name"] not in self.done]
        for pod in pods:
            url = pod_endpoint(pod)
            if url is None:
                continue
            body = {**self.body, **({"seconds": round(left, 1)} if "seconds" in self.body else {})}
            try:
                if "kv_fragmentation" in body:
                    self.leaked[pod["metadata"]["name"]] = await lane._call(self._leak_kv, url)
                else:
                    await lane._call(lane.stack.admin, url, "/admin/faults", body)
                self.done.add(pod["metadata"]["name"])
            except OSError as exc:
                lane.log(f"{name}: could not inject into {pod['metadata']['name']}: {exc}")




def run_campaign(incidents: list[Incident], *, lanes: int, timing: Timing, load: Load, workdir: str | None = None,
                 log: Callable[[str], None] = print, stagger: bool = True) -> list[Outcome]:
    """Start one stack, run `incidents` over `lanes` lanes, stop the stack; outcomes in plan order.
    `stagger`: start the lanes a share of a baseline apart, so that their incidents fall at different times."""
    stack = DemoStack(stack_settings(timing, load, workdir, lanes))
    stack.start()
    try:
        return asyncio.run(_run_lanes(stack, incidents, lanes, timing, load, log, stagger))
    finally:
        stack.stop()


async def _run_lanes(stack: DemoStack, incidents: list[Incident], lanes: int, timing: Timing, load: Load,
                     log: Callable[[str], None], stagger: bool) -> list[Outcome]:
    queue: asyncio.Queue[Incident] = asyncio.Queue()
    for incident in incidents:
        queue.put_nowait(incident)
    results: dict[int, Outcome] = {}

    async def work(lane: Lane, offset: float) -> None:
        # Staggered starts: the lanes' baselines and incidents then fall at different times.
        await asyncio.sleep(offset)
        while not queue.empty():
            incident = queue.get_nowait()
            log(f"{incident.name}: start ({incident.cause}, seed {incident.seed}); {queue.qsize()} left in the queue")
            results[incident.index] = await lane.run(incident)

    apart = timing.baseline_seconds / max(1, lanes) if stagger else 0.0
    await asyncio.gather(*(work(Lane(stack, timing, load, log), i * apart) for i in range(lanes)))
    return [results[i.index] for i in incidents if i.index in results]
