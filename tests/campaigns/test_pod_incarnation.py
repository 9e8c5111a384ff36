"""Regression (found by the pod-kill scenario): a model-server container restarted under the same pod name
came back at its template precision and stayed there, because the operator remembered switched pods by name.

Now the switch belongs to the pod's incarnation (name and restart count), and
the pod runner's restartCount only grows, as a kubelet's does.
"""

from __future__ import annotations

import pytest

from forescale_operator.readings.pods import split_pools


def _pod(name: str, restarts: int | None) -> dict:
    status = {"phase": "Running", "podIP": "127.0.0.1", "conditions": [{"type": "Ready", "status": "True"}]}
    if restarts is not None:
        status["containerStatuses"] = [{"name": "server", "restartCount": restarts}]
    return {"metadata": {"name": name, "labels": {"forescale.io/pool": "a"}, "annotations": {}},
            "spec": {"containers": [{"name": "server", "ports": [{"containerPort": 8000}]}]}, "status": status}


@pytest.mark.parametrize("before,after,same", [
    (0, 0, True),
    (0, 1, False),
    (1, 2, False),
    (None, None, True),
    (None, 1, False),
])
def test_a_restarted_container_is_a_new_incarnation(before, after, same):
    first = split_pools([_pod("chat-a-x", before)])["a"]
    second = split_pools([_pod("chat-a-x", after)])["a"]
    assert first.endpoints and second.endpoints
    assert (first.incarnation("chat-a-x") == second.incarnation("chat-a-x")) is same
