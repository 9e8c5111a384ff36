"""Campaign: two operators of different scopes over the same namespace (issue 19, defect 9).

An `-A` operator peers in a ClusterKopfPeering and an `-n default` one in a
KopfPeering, so kopf's peering never sets them apart; before the coordination
Lease both acted on `default/chat` (EmergencyStarted twice, CutbackStep six
times). Two families:

- **real processes**: two `forescale operator` processes of different scopes
  against the emulated API server and a stand-in Prometheus. Only one posts
  EmergencyStarted and writes to the contended namespace; the other writes
  nothing there; a resource only the `-A` one watches is served regardless;
  when the holder stops (SIGKILL: its Lease expires; SIGTERM: it releases it)
  the other takes over the same incident without starting it again. Short
  form: one scenario; long form: both stop modes x both start orders.
- **in-process schedules** (hypothesis): both operators' Lease managers and
  forecast loops on one test clock, with drawn kills, clean stops, restarts
  and Lease API faults in the middle of an incident. Properties: never two
  holders at once; no write and no event from an operator that does not hold
  the Lease; one EmergencyStarted for the incident, and its cut-back never
  steps back; someone holds the Lease again within one duration and a period
  after the holder goes, and the cut-back completes.
"""

from __future__ import annotations

import asyncio
import copy
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaign_tally import TALLY
from fake_prometheus import FakePrometheus
from forescale_operator.actuators import Actuators
from forescale_operator.events import RecordingEvents
from forescale_operator.handlers.reconcile import reconcile
from forescale_operator.handlers.tick import TickContext, tick
from forescale_operator.kube.http import Connection, HttpKubeApi
from forescale_operator.kube.refs import LEASES
from forescale_operator.leases import LEASE_NAME, LeaseTiming, NamespaceLeases
from loop_rig import NAME, NS, Clock, LoopRig, ScriptedSource, spec_body

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))
from operator_harness import OperatorProcess, wait_until  # noqa: E402

EXAMPLES = int(os.environ.get("FORESCALE_CAMPAIGN_EXAMPLES", "60")) // 10 or 1
LONG = EXAMPLES > 6

# --- real processes -----------------------------------------------------------

#: (how the holder stops, which scope starts first)
SCENARIOS = [("kill", "cluster-wide"), ("terminate", "namespaced"), ("kill", "namespaced"), ("terminate", "cluster-wide")]
SCOPES = {"cluster-wide": ("-A",), "namespaced": ("-n", "default")}


def _writers(cluster, namespace: str) -> dict[str, int]:
    """Successful writes the operators' own clients made in a namespace, by identity; the coordination objects
    (Leases, and the KopfPeering a namespaced operator creates at start-up) aside."""
    out: dict[str, int] = {}
    for r in cluster.request_log:
        if (r.namespace == namespace and r.resource not in ("leases", "kopfpeerings") and r.status < 400
                and r.verb in ("create", "update", "patch", "delete") and r.user_agent.startswith("forescale-operator/")):
            who = r.user_agent.split("/", 1)[1]
            out[who] = out.get(who, 0) + 1
    return out


def _emergencies(cluster, namespace: str = "default") -> list[str]:
    """The reportingInstance of every EmergencyStarted on `<namespace>/chat`."""
    return [e.get("reportingInstance", "") for e in cluster.objects("events", namespace)
            if e["involvedObject"]["name"] == NAME and e["reason"] == "EmergencyStarted"]


def _body(example, namespace: str) -> dict:
    body = spec_body(example)
    body["metadata"]["namespace"] = namespace
    body["spec"]["forecast"] = {"stepSeconds": 1}
    body["spec"]["traffic"]["cutback"] = {"stepPercent": 25, "intervalSeconds": 1, "stableSeconds": 2}
    return body


@pytest.mark.timeout(240)
@pytest.mark.parametrize("stop, first", SCENARIOS if LONG else SCENARIOS[:1], ids=lambda v: v)
def test_two_scopes_one_acts_and_the_other_takes_over(cluster, example, tmp_path, stop, first):
    TALLY.cases("operator: two scopes (processes)")
    prometheus = FakePrometheus().start()
    prometheus.resources = [("default", NAME), ("ml", NAME)]
    # A short Lease, so that a killed holder is replaced within seconds (about 9 s), long enough that the holder
    # keeps it through a 4 s stall of this loaded machine (it stands down 6 s after its last renewal).
    env = dict(FORESCALE_PROMETHEUS_URL=prometheus.url, FORESCALE_LEASE_SECONDS="9", FORESCALE_LEASE_RENEW_SECONDS="1")
    order = [first] + [s for s in SCOPES if s != first]
    operators = {}
    try:
        for scope in order:  # started together, the first one first: either may take the Lease
            operators[scope] = OperatorProcess(cluster, tmp_path / f"{scope}.log", SCOPES[scope],
                                               POD_NAME=f"op-{scope}", **env)
        for process in operators.values():
            process.wait_for_log("Peering 'forescale'", timeout=60)
        cluster.put(_body(example, "default"))
        cluster.put(_body(example, "ml"))  # only the -A operator watches ml
        holder_of = lambda ns: ((cluster.get("leases", ns, LEASE_NAME) or {}).get("spec") or {}).get("holderIdentity")  # noqa: E731
        wait_until(lambda: holder_of("default") and cluster.get("httproutes", "default", NAME), 60, "default/chat converged")
        wait_until(lambda: cluster.get("httproutes", "ml", NAME), 60, "ml/chat converged")
        assert holder_of("ml") == "op-cluster-wide"

        prometheus.latency_ms = 450.0  # 2.25 x the SLO: the incident starts
        holder = holder_of("default")
        wait_until(lambda: _emergencies(cluster), 60, "EmergencyStarted", operators[holder.removeprefix("op-")])
        time.sleep(2)  # a few more ticks of both operators
        assert _emergencies(cluster) == [holder], _emergencies(cluster)
        assert set(_writers(cluster, "default")) == {holder}, _writers(cluster, "default")
        # The uncontended namespace is served regardless, by the only operator that watches it.
        wait_until(lambda: _emergencies(cluster, "ml"), 30, "EmergencyStarted in ml", operators["cluster-wide"])
        assert _emergencies(cluster, "ml") == ["op-cluster-wide"]

        # A resource created and deleted while both run: only the holder converges it and gives it back (the
        # other's delete handler waits for it to be gone), and kopf lets it go.
        side = _body(example, "default")
        side["metadata"]["name"] = "side"
        cluster.put(side)
        wait_until(lambda: cluster.get("httproutes", "default", "side"), 30, "default/side converged")
        cluster.delete("inferencedeployments", "default", "side")
        wait_until(lambda: cluster.get("inferencedeployments", "default", "side") is None, 30, "default/side deleted")
        assert set(_writers(cluster, "default")) == {holder}, _writers(cluster, "default")

        # The holder stops; the other takes the Lease over and carries on with the same incident.
        gone = holder.removeprefix("op-")
        other = next(s for s in SCOPES if s != gone)
        if stop == "kill":
            operators[gone].process.send_signal(signal.SIGKILL)
        operators[gone].stop()
        before = _writers(cluster, "default").get(f"op-{other}", 0)
        wait_until(lambda: holder_of("default") == f"op-{other}", 30, "the Lease taken over", operators[other])
        wait_until(lambda: _writers(cluster, "default").get(f"op-{other}", 0) > before + 3, 30,
                   "the other operator acting", operators[other])
        prometheus.latency_ms = 60.0  # recovery: the new holder cuts back
        wait_until(lambda: any(e["reason"] == "CutbackCompleted" for e in cluster.objects("events", "default")),
                   90, "the cut-back completed by the new holder", operators[other])
        assert _emergencies(cluster) == [holder], "the incident was started again after the takeover"
        steps = [e for e in cluster.objects("events", "default") if e["reason"] == "CutbackStep"]
        assert len({e["message"] for e in steps}) == len(steps), "a cut-back step was repeated"
        assert all(e.get("reportingInstance") == f"op-{other}" for e in steps)
        # Deleting the resource goes through the delete handler under the Lease, and kopf lets it go.
        cluster.delete("inferencedeployments", "default", NAME)
        wait_until(lambda: cluster.get("inferencedeployments", "default", NAME) is None, 30, "default/chat deleted",
                   operators[other])
    finally:
        for process in operators.values():
            process.stop()
        prometheus.stop()


# --- in-process schedules -------------------------------------------------------

TIMING = LeaseTiming(duration_s=30, renew_s=5.0)
ROUND = 5.0  #: seconds per round: one Lease round and one loop tick of each operator
HIGH = range(3, 11)  #: rounds of the incident (p99 450 ms)
ROUNDS = 40


class ScopedOperator:
    """One operator in-process: its own client, Lease manager and forecast loop; its writes and events guarded."""

    def __init__(self, cluster, identity: str, namespaces: tuple[str, ...] | None, clock: Clock, source) -> None:
        self.identity, self.namespaces = identity, namespaces
        self.client = HttpKubeApi(Connection(cluster.url, user_agent=f"forescale-operator/{identity}"))
        self.violations: list[str] = []
        self.leases = NamespaceLeases(self.client, identity, TIMING, monotonic=clock.monotonic, wall=clock)
        self.rig = LoopRig(cluster, _Guarded(self.client, self), source)
        self.rig.clock = clock
        self.rig.restart()  # rebuild its loop on the shared clock
        self.rig.sinks[:] = [self.rig.deps.events]
        self.rig.deps.events = _GuardedEvents(self.rig.deps.events, self)
        self.acting = False
        self.alive = True
        if self.watches(NS):
            self.leases.want(NS)  # as the resource's loop does when kopf starts it

    def watches(self, namespace: str) -> bool:
        return self.namespaces is None or namespace in self.namespaces

    def holds(self) -> bool:
        return self.alive and self.leases.holds(NS)


class _Guarded:
    """The operator's API client: a write outside the Leases while not holding the namespace's Lease is a violation."""

    def __init__(self, inner, owner: ScopedOperator) -> None:
        self._inner, self._owner = inner, owner

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if name not in ("create", "replace", "patch", "delete"):
            return attr

        async def write(ref, namespace, *args, **kwargs):
            if ref is not LEASES and not self._owner.leases.holds(namespace or ""):
                self._owner.violations.append(f"{name} {ref.plural} in {namespace} without the Lease")
            return await attr(ref, namespace, *args, **kwargs)

        return write


class _GuardedEvents:
    def __init__(self, inner: RecordingEvents, owner: ScopedOperator) -> None:
        self._inner, self._owner = inner, owner

    @property
    def reasons(self):
        return self._inner.reasons

    async def post(self, reason, message):
        if not self._owner.leases.holds(NS):
            self._owner.violations.append(f"event {reason.value} without the Lease")
        await self._inner.post(reason, message)


ACTIONS = st.sampled_from(["kill", "stop", "restart", "restart-new-identity", "lease-faults"])


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(first=st.sampled_from(["cluster", "default"]),
       actions=st.dictionaries(st.integers(1, 18), st.tuples(st.sampled_from(["cluster", "default"]), ACTIONS),
                               max_size=3))
def test_schedules_of_two_scopes_never_act_twice(cluster, example, first, actions):
    TALLY.cases("operator: two scopes (schedules)")
    asyncio.run(_schedule(cluster, example, first, actions))


async def _schedule(cluster, example, first, actions):
    clock = Clock()
    source = ScriptedSource()  # one Prometheus for both
    scopes = {"cluster": None, "default": ("default",)}
    ops = {name: ScopedOperator(cluster, f"op-{name}", scopes[name], clock, source) for name in (first, *[
        n for n in scopes if n != first])}
    retired: list[ScopedOperator] = []
    cluster.put(spec_body(example))
    weights_b, holders_missing_since = [], None
    streak: dict[str, int] = {}  # consecutive incident rounds each operator held the Lease
    started_possible = False
    try:
        for rnd in range(ROUNDS):
            clock.advance(ROUND)
            source.latency_ms = 450.0 if rnd in HIGH else 60.0
            if rnd in actions:
                name, action = actions[rnd]
                ops[name] = await _act(cluster, ops[name], action, clock, source, retired,
                                       last_alive=not any(o.alive for n, o in ops.items() if n != name))
            for op in ops.values():
                if op.alive:
                    await op.leases.step()
                    holding = [o.identity for o in ops.values() if o.holds()]
                    assert len(holding) <= 1, f"round {rnd}: two holders {holding}"
            for op in ops.values():
                if op.holds():
                    await _tick(cluster, op)
                else:
                    op.acting = False  # it converges again when it takes the Lease back
                if rnd in HIGH:
                    streak[op.identity] = streak.get(op.identity, 0) + 1 if op.holds() else 0
                    started_possible |= streak[op.identity] >= 4  # the engine sees the breach for long enough
            weights_b.append(_weight_b(cluster) or 0)
            # Liveness: someone holds the Lease again within a duration and a period after it was lost.
            if any(o.holds() for o in ops.values()):
                holders_missing_since = None
            elif holders_missing_since is None:
                holders_missing_since = rnd
            else:
                assert (rnd - holders_missing_since) * ROUND <= TIMING.duration_s + 2 * TIMING.renew_s, \
                    f"round {rnd}: no holder since round {holders_missing_since}"
        every = list(ops.values()) + retired
        violations = [v for o in every for v in o.violations]
        assert not violations, violations
        reasons = [r for o in every for sink in o.rig.sinks for r in sink.reasons]
        assert reasons.count("EmergencyStarted") == (1 if started_possible else reasons.count("EmergencyStarted")) <= 1, \
            (reasons, actions)
        calm = weights_b[HIGH.stop:]
        assert all(a >= b for a, b in zip(calm, calm[1:])), f"the cut-back stepped back: {weights_b}"
        assert weights_b[-1] == 0 and reasons.count("CutbackCompleted") <= 1, (weights_b, reasons)
    finally:
        cluster.server.faults.clear()
        for op in list(ops.values()) + retired:
            await op.client.close()
        cluster.delete("inferencedeployments", NS, NAME)
        if cluster.get("leases", NS, LEASE_NAME):
            cluster.delete("leases", NS, LEASE_NAME)


async def _act(cluster, op: ScopedOperator, action: str, clock: Clock, source, retired: list, last_alive: bool):
    """Apply one drawn action; the last operator alive is never left dead (a restart follows at once)."""
    if action == "lease-faults":
        cluster.inject_faults(500, count=3, resource="leases")  # the next three Lease calls fail, whoever makes them
        return op
    if action in ("kill", "stop") and op.alive:
        if action == "stop":
            await op.leases.release_all()
        op.alive = False
        if not last_alive:
            return op
        action = "restart"
    if action.startswith("restart"):
        if op.alive and action == "restart":
            op.alive = False  # a kill, then the same pod starts again: same identity, fresh memory
        elif op.alive:
            await op.leases.release_all()
            op.alive = False
        retired.append(op)
        identity = op.identity if action == "restart" else f"{op.identity}-{len(retired)}"
        return ScopedOperator(cluster, identity, op.namespaces, clock, source)
    return op


async def _tick(cluster, op: ScopedOperator) -> None:
    """What the registration's loop does under the Lease: converge once on taking it, then tick."""
    body = copy.deepcopy(cluster.get("inferencedeployments", NS, NAME))
    if not op.acting:
        await reconcile(body, op.rig.deps)
        op.acting = True
        body = copy.deepcopy(cluster.get("inferencedeployments", NS, NAME))
    await tick(TickContext(body), op.rig.deps)


def _weight_b(cluster) -> int | None:
    route = cluster.get("httproutes", NS, NAME)
    if route is None:
        return None
    return next(r.get("weight") for r in route["spec"]["rules"][0]["backendRefs"] if r["name"].endswith("-b"))
