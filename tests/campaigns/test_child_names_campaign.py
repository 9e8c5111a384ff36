"""Campaign: name collision and child repair over random resource names (issue 19, defect 5).

Each example creates 2-4 InferenceDeployments whose names are drawn to collide
(`x`, `x-a`, `x-b`, `x-a-b`, ...), then deletes random children and resources.
Properties after every tick:
- a name ending in -a/-b is Invalid and owns nothing;
- every other resource has its five children, each controlled by it (no child
  is shared, none is lost when another resource is deleted);
- a deleted child is back after one tick.
"""

from __future__ import annotations

import asyncio
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaign_tally import TALLY
from children_rig import NS, ChildrenRig
from forescale_operator.children import name_problem
from forescale_operator.kube.http import Connection, HttpKubeApi

EXAMPLES = int(os.environ.get("FORESCALE_CAMPAIGN_EXAMPLES", "60")) // 3 or 1

BASE = st.sampled_from(["chat", "x", "m1", "svc-a1", "ab"])
SUFFIX = st.lists(st.sampled_from(["-a", "-b", "-c", "a", "-ab"]), max_size=2).map("".join)
NAMES = st.lists(st.tuples(BASE, SUFFIX).map("".join), min_size=2, max_size=4, unique=True)
STEPS = st.lists(st.one_of(
    st.tuples(st.just("child"), st.integers(0, 3), st.integers(0, 4)),
    st.tuples(st.just("resource"), st.integers(0, 3), st.just(0)),
), max_size=4)


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(names=NAMES, steps=STEPS)
def test_random_names_never_share_or_lose_a_child(cluster, example, names, steps):
    TALLY.cases("operator: random resource names")
    asyncio.run(_run(cluster, example, names, steps))


async def _run(cluster, example, names, steps):
    api = HttpKubeApi(Connection(cluster.url))
    rig = ChildrenRig(cluster, api, example)
    try:
        live = list(names)
        for name in names:
            await rig.create(name)
        await _tick_and_check(rig, live)
        for kind, i, j in steps:
            if not live:
                break
            name = live[i % len(live)]
            if kind == "child":
                plural, child = rig.children_of(name)[j]
                if cluster.get(plural, NS, child) is not None:  # an Invalid name has no children
                    cluster.delete(plural, NS, child)
            else:
                cluster.delete("inferencedeployments", NS, name)
                live.remove(name)
            await _tick_and_check(rig, live)
    finally:
        rig.delete_all()
        await api.close()


async def _tick_and_check(rig: ChildrenRig, live: list[str]) -> None:
    for name in live:
        await rig.tick(name)
    for name in live:
        if name_problem(name):
            assert rig.phase(name) == "Invalid", name
            uid = rig.resource(name)["metadata"]["uid"]
            owned = [o["metadata"]["name"] for plural in ("deployments", "services") for o in rig.cluster.objects(plural, NS)
                     if any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or [])]
            assert owned == [], (name, owned)
        else:
            assert rig.intact(name) == [], (name, rig.intact(name))
