"""The per-namespace coordination Lease (leases.py) against the emulated API server, on a test clock.

Each candidate is a `NamespaceLeases` with its own API client (and user agent) and a shared
monotonic clock the test advances; `step()` is one round of the background task.
"""

from __future__ import annotations

import asyncio

import pytest

from forescale_operator.config import ConfigError, load_config
from forescale_operator.kube.http import Connection, HttpKubeApi
from forescale_operator.leases import LEASE_NAME, LeaseTiming, NamespaceLeases, micro_time, start_leases

TIMING = LeaseTiming(duration_s=30, renew_s=5.0)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
async def candidates(cluster):
    """`make(identity)` -> NamespaceLeases on its own client; all share one test clock (`clock`)."""
    clock, clients = Clock(), []

    def make(identity: str, timing: LeaseTiming = TIMING) -> NamespaceLeases:
        client = HttpKubeApi(Connection(cluster.url, user_agent=f"forescale-operator/{identity}"))
        clients.append(client)
        return NamespaceLeases(client, identity, timing, monotonic=clock)

    make.clock = clock
    yield make
    for client in clients:
        await client.close()


def lease(cluster, namespace: str = "default") -> dict:
    return cluster.get("leases", namespace, LEASE_NAME)


async def test_the_first_candidate_creates_and_holds_the_other_stands_by(cluster, candidates):
    a, b = candidates("op-a"), candidates("op-b")
    for c in (a, b):
        c.want("default")
    await a.step()
    await b.step()
    assert a.holds("default") and not b.holds("default")
    spec = lease(cluster)["spec"]
    assert spec["holderIdentity"] == "op-a" and spec["leaseDurationSeconds"] == 30 and spec["leaseTransitions"] == 0
    assert b.holder("default") == "op-a"


async def test_a_renewing_holder_is_never_displaced(cluster, candidates):
    a, b = candidates("op-a"), candidates("op-b")
    a.want("default"), b.want("default")
    await a.step()
    for _ in range(20):  # 100 s, well past the 30 s duration, renewed every 5 s
        candidates.clock.t += 5
        await a.step()
        await b.step()
        assert a.holds("default") and not b.holds("default")
    writes = [r for r in cluster.request_log if r.resource == "leases" and r.verb in ("create", "update")]
    assert {r.user_agent for r in writes} == {"forescale-operator/op-a"}
    assert len(writes) == 21  # one create, then one blind renewal per period: no read before each


@pytest.mark.parametrize("silent_for, taken", [(25.0, False), (29.0, False), (30.0, True), (45.0, True)])
async def test_a_silent_holder_is_taken_over_after_the_duration_as_the_candidate_saw_it(cluster, candidates, silent_for,
                                                                                         taken):
    a, b = candidates("op-a"), candidates("op-b")
    a.want("default"), b.want("default")
    await a.step()
    await b.step()  # b first sees this version now: its expiry clock starts here
    candidates.clock.t += silent_for  # a crashed: no renewals, no release
    await b.step()
    assert b.holds("default") is taken
    if taken:
        spec = lease(cluster)["spec"]
        assert spec["holderIdentity"] == "op-b" and spec["leaseTransitions"] == 1


async def test_the_holder_stops_acting_at_its_deadline_before_anyone_may_take_over(cluster, candidates):
    a = candidates("op-a")
    a.want("default")
    await a.step()
    cluster.inject_faults(500, count=100, resource="leases")  # every renewal fails from now on
    candidates.clock.t += 19.9
    await a.step()
    assert a.holds("default")  # within the deadline (2/3 of 30 s)
    candidates.clock.t += 0.2
    assert not a.holds("default")  # 20.1 s after the last renewal sent: stands down, 10 s before expiry


async def test_a_released_lease_is_taken_at_the_next_round(cluster, candidates):
    a, b = candidates("op-a"), candidates("op-b")
    a.want("default"), b.want("default")
    await a.step()
    await b.step()
    await a.release_all()
    assert not a.holds("default") and lease(cluster)["spec"]["holderIdentity"] == ""
    candidates.clock.t += 5
    await b.step()
    assert b.holds("default")


async def test_dropping_the_last_resource_of_a_namespace_releases_its_lease(cluster, candidates):
    a = candidates("op-a")
    a.want("default"), a.want("default"), a.want("ml")
    await a.step()
    a.drop("default")
    candidates.clock.t += 5
    await a.step()
    assert a.holds("default")  # one resource left there
    a.drop("default")
    candidates.clock.t += 5
    await a.step()
    assert not a.holds("default") and a.holds("ml")
    assert lease(cluster)["spec"]["holderIdentity"] == "" and lease(cluster, "ml")["spec"]["holderIdentity"] == "op-a"


async def test_a_restarted_process_with_the_same_identity_takes_its_lease_back_at_once(cluster, candidates):
    first = candidates("op-a")
    first.want("default")
    await first.step()
    again = candidates("op-a")  # the same pod, its container restarted: fresh memory
    again.want("default")
    await again.step()
    assert again.holds("default")
    assert lease(cluster)["spec"]["leaseTransitions"] == 0  # not a transition: the same holder


async def test_two_candidates_racing_for_an_expired_lease_never_both_win(cluster, candidates):
    a, b, c = candidates("op-a"), candidates("op-b"), candidates("op-c")
    for x in (a, b, c):
        x.want("default")
    await a.step()
    await b.step(), await c.step()
    candidates.clock.t += 31
    await asyncio.gather(b.step(), c.step())  # both read the same version, both write it back: one gets a 409
    assert [b.holds("default"), c.holds("default")].count(True) == 1
    assert lease(cluster)["spec"]["leaseTransitions"] == 1


async def test_a_candidate_uses_the_holders_duration(cluster, candidates):
    a = candidates("op-a", LeaseTiming(duration_s=60, renew_s=5.0))
    b = candidates("op-b")  # its own default is 30 s
    a.want("default"), b.want("default")
    await a.step()
    await b.step()
    candidates.clock.t += 45
    await b.step()
    assert not b.holds("default")
    candidates.clock.t += 15
    await b.step()
    assert b.holds("default")


async def test_the_lease_the_operator_writes_passes_the_official_schema(cluster, candidates):
    a = candidates("op-a")
    a.want("default")
    await a.step()
    written = lease(cluster)
    assert written["apiVersion"] == "coordination.k8s.io/v1" and written["kind"] == "Lease"
    assert written["spec"]["renewTime"].endswith("Z") and "." in written["spec"]["renewTime"]
    writes = [r for r in cluster.request_log if r.resource == "leases" and r.verb in ("create", "update")]
    assert writes and all(r.status < 400 for r in writes)


def test_micro_time_is_rfc3339_with_microseconds():
    assert micro_time(0.5) == "1970-01-01T00:00:00.500000Z"


async def test_no_coordination_when_turned_off_or_not_served(cluster, api):
    assert await start_leases(api, "op-a", None) is None
    assert isinstance(await start_leases(api, "op-a", TIMING), NamespaceLeases)
    cluster.set_served("leases", False)
    assert await start_leases(api, "op-a", TIMING) is None


@pytest.mark.parametrize("env, expected", [
    ({}, (30, 5.0)),
    ({"FORESCALE_LEASE_SECONDS": "15"}, (15, 5.0)),
    ({"FORESCALE_LEASE_SECONDS": "6"}, (6, 2.0)),  # the default period shrinks to a third
    ({"FORESCALE_LEASE_SECONDS": "3", "FORESCALE_LEASE_RENEW_SECONDS": "0.5"}, (3, 0.5)),
    ({"FORESCALE_LEASE_SECONDS": "0"}, (0, 5.0)),
])
def test_lease_settings(env, expected):
    config = load_config(env)
    assert (config.lease_seconds, config.lease_renew_seconds) == expected


@pytest.mark.parametrize("env, message", [
    ({"FORESCALE_LEASE_SECONDS": "1.5"}, "FORESCALE_LEASE_SECONDS: must be a whole number"),
    ({"FORESCALE_LEASE_SECONDS": "-1"}, "FORESCALE_LEASE_SECONDS: must be 0 (off) or 1..3600"),
    ({"FORESCALE_LEASE_SECONDS": "30", "FORESCALE_LEASE_RENEW_SECONDS": "11"}, "a third of FORESCALE_LEASE_SECONDS (10)"),
    ({"FORESCALE_LEASE_RENEW_SECONDS": "nan"}, "FORESCALE_LEASE_RENEW_SECONDS: must be 0.1"),
    ({"FORESCALE_LEASE_RENEW_SECONDS": "soon"}, "FORESCALE_LEASE_RENEW_SECONDS: must be a number"),
])
def test_bad_lease_settings_name_the_variable(env, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        load_config(env)


async def test_a_round_renews_every_namespace_at_once_not_one_after_another(cluster):
    """With an API that answers each write in 0.3 s, a round over two namespaces takes one answer's time.

    One after another, a loaded API server made a round over 5 namespaces longer than the 20 s deadline,
    and the operator lost Leases it was renewing (1,000 resources, docs/operator-scale.md)."""
    client = HttpKubeApi(Connection(cluster.url, user_agent="forescale-operator/op-a"))
    in_flight, most = [0], [0]

    class Slow:
        def __getattr__(self, name):
            return getattr(client, name)

        async def _slow(self, call, *args):
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
            await asyncio.sleep(0.3)
            try:
                return await call(*args)
            finally:
                in_flight[0] -= 1

        async def create(self, *args):
            return await self._slow(client.create, *args)

        async def replace(self, *args):
            return await self._slow(client.replace, *args)

    try:
        leases = NamespaceLeases(Slow(), "op-a", TIMING)
        for namespace in ("default", "ml"):
            leases.want(namespace)
        await leases.step()
        assert leases.holds("default") and leases.holds("ml")
        assert most[0] == 2  # both writes were in flight together
    finally:
        await client.close()


async def test_a_round_that_fails_unexpectedly_costs_one_round_not_the_task(cluster):
    """An error the client does not map to ApiError must not end the background task: a dead task takes and
    renews no Lease again, and the operator stands by everywhere without a word."""
    client = HttpKubeApi(Connection(cluster.url, user_agent="forescale-operator/op-a"))
    failures = [1]

    class BrokenOnce:
        def __getattr__(self, name):
            return getattr(client, name)

        async def get(self, *args):
            if failures[0]:
                failures[0] -= 1
                raise RuntimeError("a payload the client could not read")
            return await client.get(*args)

    leases = NamespaceLeases(BrokenOnce(), "op-a", LeaseTiming(duration_s=30, renew_s=0.05))
    leases.want("default")
    task = asyncio.create_task(leases.run())
    try:
        for _ in range(100):
            if leases.holds("default"):
                break
            await asyncio.sleep(0.02)
        assert failures[0] == 0, "the failing round never ran"
        assert leases.holds("default") and not task.done()
    finally:
        await leases.close(task)
        await client.close()
