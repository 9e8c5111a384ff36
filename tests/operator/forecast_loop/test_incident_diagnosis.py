"""The diagnosis beside the playbook (`forecast_loop/incident_diagnosis.py`): it runs as its own task,
posts RootCauseSuspected with the top cause's numbers, writes status.diagnosis and the gauge, and a
Prometheus that fails or hangs never reaches the tick."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from forescale_operator.children import Owner
from forescale_operator.diagnosis.gather import queries
from forescale_operator.forecast_loop.incident_diagnosis import IncidentDiagnoses
from forescale_operator.reasons import Reason
from forescale_operator.telemetry import OperatorMetrics

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "diagnosis"))
from test_diagnosis_gather import HANG, HEALTHY, HEALTHY_NOW, FakeProm  # noqa: E402

OWNER = Owner(namespace="ml", name="chat", uid="u-1")


def _both(values):
    return {f"{k}.{side}": v for k, v in values.items() for side in ("now", "before")}


class ClosingProm(FakeProm):
    closed = False

    async def close(self) -> None:
        self.closed = True


class Api:
    """Records status patches; the Kubernetes facts' reads find nothing."""

    def __init__(self) -> None:
        self.patches: list[dict] = []

    async def get(self, ref, namespace, name):
        return None

    async def list(self, ref, namespace, label_selector=None):
        return []

    async def patch(self, ref, namespace, name, patch, subresource=None):
        self.patches.append(patch)
        return {}


class Events:
    def __init__(self) -> None:
        self.posted: list[tuple[Reason, str]] = []

    async def post(self, reason: Reason, message: str) -> None:
        self.posted.append((reason, message))


CACHE_FAILURE = _both(HEALTHY) | HEALTHY_NOW | {"result_cache_hit_ratio.now": 0.3}
HEALTHY_ANSWERS = _both(HEALTHY) | HEALTHY_NOW
BROKEN = {k: RuntimeError("connection refused") for k in queries("ml", "chat", "a")}


@pytest.mark.parametrize("answers, top, event", [
    (CACHE_FAILURE, "cache-failure", True),  # a cause shows: the event carries its numbers
    (HEALTHY_ANSWERS, None, False),          # nothing suspected: no event, but status says so
    (BROKEN, None, False),                   # Prometheus fails: every rule unknown, nothing raised
])
async def test_the_diagnosis_posts_its_top_cause_and_writes_status(answers, top, event):
    prom, api, events, telemetry = ClosingProm(answers), Api(), Events(), OperatorMetrics()
    diagnoses = IncidentDiagnoses(lambda url, timeout_s, at: prom, timeout_s=0.5)
    assert diagnoses.start(api=api, events=events, telemetry=telemetry, owner=OWNER,
                           prometheus_url="http://prom:9090", status={}, now=1_000.0)
    await diagnoses.tasks[OWNER.uid]
    assert prom.closed
    assert [r for r, _ in events.posted] == ([Reason.ROOT_CAUSE_SUSPECTED] if event else [])
    if event:
        assert "0.3" in events.posted[0][1] and "0.8" in events.posted[0][1]
    written = api.patches[-1]["status"]["diagnosis"]
    assert written.get("top") == top and written["pool"] == "a"
    assert len(written["findings"]) == 7


async def test_a_hanging_prometheus_never_holds_the_caller():
    prom, api, events = ClosingProm({k: HANG for k in queries("ml", "chat", "a")}), Api(), Events()
    diagnoses = IncidentDiagnoses(lambda url, timeout_s, at: prom, timeout_s=0.2)
    # start() returns at once: the tick goes on while the queries wait
    assert diagnoses.start(api=api, events=events, telemetry=OperatorMetrics(), owner=OWNER,
                           prometheus_url="http://prom:9090", status={}, now=1_000.0)
    task = diagnoses.tasks[OWNER.uid]
    assert not task.done()
    # a second incident tick while it runs starts nothing more
    assert not diagnoses.start(api=api, events=events, telemetry=OperatorMetrics(), owner=OWNER,
                               prometheus_url="http://prom:9090", status={}, now=1_015.0)
    await asyncio.wait_for(task, 5.0)  # bounded by the per-query timeout
    assert api.patches and not events.posted


@pytest.mark.parametrize("url, started", [(None, False), ("http://prom:9090", True)])
async def test_no_prometheus_means_no_diagnosis_and_forget_cancels(url, started):
    diagnoses = IncidentDiagnoses(lambda u, t, at: ClosingProm({k: HANG for k in queries("ml", "chat", "a")}),
                                  timeout_s=30.0)
    assert diagnoses.start(api=Api(), events=Events(), telemetry=OperatorMetrics(), owner=OWNER,
                           prometheus_url=url, status={}, now=0.0) is started
    task = diagnoses.tasks.get(OWNER.uid)
    diagnoses.forget(OWNER)
    assert OWNER.uid not in diagnoses.tasks
    if task is not None:
        with pytest.raises(asyncio.CancelledError):
            await task
