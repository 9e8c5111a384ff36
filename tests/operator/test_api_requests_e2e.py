"""The real operator (kopf) asks the API server nothing in a steady-state tick where nothing changed.

Its Deployments, Services and pods come from kopf's indexes (kube/indexed.py),
fed by watches; before, each tick made two GETs and two LISTs besides the
PATCH (5.07 requests per tick at main 3744309 in this test's setting, 3
resources over 20 s; 1.07 at 69f5862, one status PATCH per tick plus the
namespace Lease's renewals). The PATCH came from the Ready condition: set from
readiness, then from the engine, its lastTransitionTime moved on every tick
without a transition; measured against the object it does not, so an
unchanged status is not written: 0.07 at scale20 (the Lease's renewals only;
docs/operator-scale.md).

A Prometheus URL that refuses connections keeps the whole tick running
(metrics unavailable, pods read, the engine holding) without a Prometheus.
"""

from __future__ import annotations

import re
import time
import urllib.request
from collections import Counter

from operator_harness import free_port, wait_until

RESOURCES = 3
WINDOW_S = 10.0


def _ticks(operator) -> float:
    url = f"http://127.0.0.1:{operator.env['FORESCALE_METRICS_PORT']}/metrics"
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return sum(float(v) for v in re.findall(r'^forescale_operator_ticks_total\{result="(?:ok|error)"\} (\S+)', text, re.M))


def test_a_steady_tick_asks_the_api_server_nothing(cluster, start_operator, example):
    operator = start_operator(FORESCALE_PROMETHEUS_URL=f"http://127.0.0.1:{free_port()}", FORESCALE_PEERING="")
    names = [f"svc-{i}" for i in range(RESOURCES)]
    for name in names:
        body = example()
        body["metadata"]["name"] = name
        body["spec"]["traffic"] = {"router": "none"}
        body["spec"].setdefault("forecast", {})["stepSeconds"] = 1
        cluster.put(body)

    def past_pending():
        return all(((cluster.get("inferencedeployments", "default", n) or {}).get("status") or {}).get("phase")
                   not in (None, "Pending") for n in names)
    wait_until(past_pending, 60, "every resource past Pending", operator)
    time.sleep(5)  # past the first ticks' transitions
    start, ticks_before = len(cluster.request_log), _ticks(operator)
    time.sleep(WINDOW_S)
    made = cluster.request_log.records()[start:]
    ticks = _ticks(operator) - ticks_before

    print(f"\n{len(made) / ticks:.2f} requests per tick: {len(made)} over {ticks:.0f} ticks:",
          dict(Counter((r.verb, r.resource, r.subresource) for r in made)))
    ours = Counter((r.verb, r.resource, r.subresource) for r in made if r.user_agent.startswith("forescale-operator"))
    assert ticks >= RESOURCES * WINDOW_S / 2, (ticks, operator.log[-2000:])
    for read in (("get", "deployments", ""), ("list", "pods", ""), ("list", "services", "")):
        assert ours[read] == 0, ours
    # nothing changed, so status is not written (1 PATCH per tick before: Ready's time moved every tick)
    assert ours[("patch", "inferencedeployments", "status")] == 0, ours
    # what is left: the namespace Lease's renewals (every few seconds, not per tick) and kopf's own (none here)
    assert len(made) / ticks <= 0.3, Counter((r.verb, r.resource, r.subresource, r.user_agent) for r in made)
