"""The diagnosis campaign's short form (the long form is `python -m bench.diagnosis`, in `make bench`).

The demo stack for real (the operator, Prometheus, emulated-GPU model servers), on a shorter clock:
one pool-A pod slowed down 4-8x, diagnosed as `bad-pod` and deleted so its Deployment replaces it, within
the 60 s goal; beside it a control run, in which the operator posts no RootCauseSuspected and the same
checklist run on demand suspects nothing. About 90 s on two cores.
"""

from __future__ import annotations

import os

import pytest

from bench._diagnosis_campaign import CONTROL, Incident, Load, Timing, run_campaign
from bench.diagnosis import LATENCY_GOAL_S, control_clean
from forescale_devcluster.demo_stack import prometheus_available

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not prometheus_available(), reason="needs Prometheus: apt-get install -y prometheus (make test does)"),
]

#: the long form's clock, shortened: a 30 s "before" window, a 3 s pod start-up, a 10 s control wait
SHORT = Timing(before_seconds=30, warmup_seconds=20, ramp_seconds=10, detect_seconds=60, diagnose_seconds=60,
               control_seconds=10, startup_seconds=3.0)


def test_a_bad_pod_is_named_and_replaced_and_a_control_run_suspects_nothing(tmp_path):
    workdir = os.environ.get("FORESCALE_E2E_WORKDIR") or str(tmp_path)
    lines: list[str] = []
    bad, control = run_campaign([Incident(0, "bad-pod", 7), Incident(1, CONTROL, 7)], lanes=2, timing=SHORT,
                                load=Load(), workdir=workdir, log=lines.append, stagger=False)
    story = "\n".join(lines + bad.events + control.events)
    assert bad.trigger in ("EmergencyStarted", "Overload") and not bad.problem, story
    assert bad.top == "bad-pod", story
    assert bad.latency_s is not None and bad.latency_s <= LATENCY_GOAL_S, story
    assert bad.slowed_pod and bad.slowed_pod in bad.message, story
    assert f"Delete pod {bad.slowed_pod} so that Deployment {bad.incident.name}-a replaces it" in bad.bad_pod_deleted, story
    assert control_clean(control), story
