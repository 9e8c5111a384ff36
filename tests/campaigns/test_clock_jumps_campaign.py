"""Campaign: wall-clock jumps, both directions, at random moments of an incident (issue 19, defect 8).

Each example runs an incident (Emergency -> Recovering -> CuttingBack) and
jumps the wall clock by drawn amounts (-1 day .. +1 day) before drawn ticks,
sometimes with an operator restart. Properties: the cut-back completes within
a bounded number of ticks, takes at most one step per tick, and the stable
period is never skipped (no Recovered before two calm ticks).
"""

from __future__ import annotations

import asyncio
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaign_tally import TALLY
from forescale_operator.kube.http import Connection, HttpKubeApi
from loop_rig import LoopRig, spec_body

EXAMPLES = int(os.environ.get("FORESCALE_CAMPAIGN_EXAMPLES", "60")) // 4 or 1
JUMP = st.one_of(st.sampled_from([-86400.0, -3600.0, -30.0, -5.0, 5.0, 30.0, 3600.0, 86400.0]),
                 st.floats(min_value=-86400, max_value=86400, allow_nan=False))


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(jumps=st.dictionaries(st.integers(0, 14), JUMP, max_size=3), restart_at=st.one_of(st.none(), st.integers(0, 14)))
def test_clock_jumps_neither_stall_nor_skip_the_incident(cluster, example, jumps, restart_at):
    TALLY.cases("operator: clock jumps")
    asyncio.run(_run(cluster, example, jumps, restart_at))


async def _run(cluster, example, jumps, restart_at):
    api = HttpKubeApi(Connection(cluster.url))
    rig = LoopRig(cluster, api)
    try:
        await rig.create(spec_body(example))
        for _ in range(3):
            await rig.tick()
        rig.source.latency_ms = 450.0
        for _ in range(2):
            await rig.tick()
        assert rig.phase() == "Emergency"
        rig.source.latency_ms = 60.0
        seen, calm = [rig.weights()["b"]], 0
        for i in range(30):
            if i in jumps:
                rig.clock.jump(jumps[i])
            if i == restart_at:
                rig.restart()
            await rig.tick()
            calm += 1
            if "Recovered" in rig.reasons:
                assert calm >= 2, f"stable period skipped: Recovered after {calm} calm tick(s)"
            seen.append(rig.weights()["b"])
            if "CutbackCompleted" in rig.reasons:
                break
        assert "CutbackCompleted" in rig.reasons, (seen, jumps, restart_at)
        assert all(a - b in (0, 10) for a, b in zip(seen, seen[1:])), seen
    finally:
        cluster.delete("inferencedeployments", "default", "chat")
        await api.close()
