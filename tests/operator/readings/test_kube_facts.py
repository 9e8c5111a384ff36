"""The Kubernetes facts of a diagnosis (readings/kube_facts.py): restarts and OOM kills in the window,
the pool's rollout, and each read failing on its own."""

from __future__ import annotations

import pytest

from forescale_operator.kube.errors import ApiError
from forescale_operator.readings.kube_facts import container_facts, read_kube_facts, rollout_facts

NOW = 1_790_000_000.0  # 2026-09-21T14:13:20Z
WINDOW = 660.0


def _pod(*terminations, init=()):
    def status(t):
        reason, finished = t
        return {"lastState": {"terminated": {"reason": reason, "finishedAt": finished}}} if finished else {}
    return {"status": {"containerStatuses": [status(t) for t in terminations],
                       "initContainerStatuses": [status(t) for t in init]}}


# (pods, restarted, OOMKilled)
CONTAINERS = [
    ([], 0, 0),
    ([_pod(("Completed", None))], 0, 0),
    ([_pod(("OOMKilled", "2026-09-21T14:10:00Z"))], 1, 1),
    ([_pod(("Error", "2026-09-21T14:10:00Z"), ("OOMKilled", "2026-09-21T14:12:59Z"))], 2, 1),
    ([_pod(("OOMKilled", "2026-09-21T13:00:00Z"))], 0, 0),  # long before the window
    ([_pod(("OOMKilled", "2026-09-21T14:20:00Z"))], 0, 0),  # after the instant diagnosed
    ([_pod(("OOMKilled", "not a time")), {"status": None}, {}], 0, 0),
    ([_pod(init=[("OOMKilled", "2026-09-21T14:05:00Z")])], 1, 1),
]


@pytest.mark.parametrize("pods,restarted,oom", CONTAINERS)
def test_containers_count_when_their_last_termination_is_in_the_window(pods, restarted, oom):
    assert container_facts(pods, since=NOW - WINDOW, until=NOW) == {"restarted_containers": restarted,
                                                                     "oom_killed_containers": oom}


def _deployment(revision):
    annotations = {"deployment.kubernetes.io/revision": revision} if revision is not None else {}
    return {"metadata": {"annotations": annotations}}


def _rs(revision, created):
    return {"metadata": {"annotations": {"deployment.kubernetes.io/revision": revision}, "creationTimestamp": created}}


# (deployment revision, replica sets, changed, age, why)
ROLLOUTS = [
    ("1", [_rs("1", "2026-01-01T00:00:00Z")], False, None, "revision 1: no rollout since the Deployment was created"),
    ("3", [_rs("2", "2026-09-01T00:00:00Z"), _rs("3", "2026-09-21T14:09:20Z")], True, 240.0, None),
    ("3", [_rs("2", "2026-09-01T00:00:00Z")], True, None, "no ReplicaSet of revision 3 with a creation time"),
    ("2", [_rs("2", "2026-09-21T14:20:00Z")], True, 0.0, None),  # clock skew: never a negative age
    (None, [], None, None, "the Deployment has no deployment.kubernetes.io/revision annotation"),
    ("two", [], None, None, "the Deployment has no deployment.kubernetes.io/revision annotation"),
]


@pytest.mark.parametrize("revision,replica_sets,changed,age,why", ROLLOUTS)
def test_the_rollout_is_the_newest_revisions_replica_set(revision, replica_sets, changed, age, why):
    assert rollout_facts(_deployment(revision), replica_sets, NOW) == (changed, age, why)


class FakeKube:
    def __init__(self, pods=None, deployment=None, replica_sets=None, fail: dict | None = None):
        self.data = {"pods": pods or [], "replicasets": replica_sets or []}
        self.deployment, self.fail = deployment, fail or {}
        self.selectors = []

    async def get(self, ref, namespace, name):
        if "deployments" in self.fail:
            raise self.fail["deployments"]
        assert (ref.plural, namespace, name) == ("deployments", "ml", "chat-a")
        return self.deployment

    async def list(self, ref, namespace, label_selector=None):
        self.selectors.append(label_selector)
        if ref.plural in self.fail:
            raise self.fail[ref.plural]
        return self.data[ref.plural]


async def test_every_fact_read_for_the_pools_objects():
    kube = FakeKube(pods=[_pod(("OOMKilled", "2026-09-21T14:10:00Z"))], deployment=_deployment("2"),
                    replica_sets=[_rs("2", "2026-09-21T14:03:20Z")])
    facts = await read_kube_facts(kube, "ml", "chat", "a", now=NOW, window_seconds=WINDOW)
    assert (facts.oom_killed_containers, facts.restarted_containers, facts.revision_changed,
            facts.revision_age_seconds) == (1, 1, True, 600.0)
    assert facts.missing_why == {}
    assert set(kube.selectors) == {"forescale.io/deployment=chat,forescale.io/pool=a"}


@pytest.mark.parametrize("fail,missing,reason", [
    ({"pods": ApiError(403, "Forbidden", "pods is forbidden", method="GET", path="/api/v1/namespaces/ml/pods")},
     ("oom_killed_containers", "restarted_containers"),
     "listing the pool's pods failed: ApiError: GET /api/v1/namespaces/ml/pods: 403 Forbidden: pods is forbidden"),
    ({"deployments": ApiError(500, "InternalError", "etcd", method="GET", path="/apis/apps/v1/x")},
     ("revision_changed", "revision_age_seconds"),
     "reading the pool's Deployment failed: ApiError: GET /apis/apps/v1/x: 500 InternalError: etcd"),
    ({"replicasets": TimeoutError("slow")}, ("revision_changed", "revision_age_seconds"),
     "reading the pool's Deployment failed: TimeoutError: slow"),
], ids=["pods-forbidden", "deployment-error", "replicasets-timeout"])
async def test_one_failed_read_leaves_only_its_facts_missing_with_the_reason(fail, missing, reason):
    kube = FakeKube(pods=[], deployment=_deployment("1"), fail=fail)
    facts = await read_kube_facts(kube, "ml", "chat", "a", now=NOW, window_seconds=WINDOW)
    for name in missing:
        assert getattr(facts, name) is None and facts.missing_why[name] == reason
    others = {"oom_killed_containers", "restarted_containers", "revision_changed"} - set(missing)
    assert all(getattr(facts, name) is not None for name in others)


async def test_a_missing_deployment_is_named():
    facts = await read_kube_facts(FakeKube(deployment=None), "ml", "chat", "a", now=NOW, window_seconds=WINDOW)
    assert facts.revision_changed is None and facts.missing_why["revision_changed"] == "Deployment ml/chat-a not found"
    assert facts.restarted_containers == 0
