"""The real operator (`forescale operator`, kopf, over HTTP) against the emulated API server.

Each test starts its own API server and operator process: the order of
tests never matters. Loop intervals are shortened (stepSeconds 1).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from operator_harness import OperatorProcess, wait_until

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = ROOT / "bin" / "kubectl"


def kubectl(cluster, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, KUBECONFIG=str(cluster.kubeconfig_path))
    return subprocess.run([str(KUBECTL), *args], env=env, capture_output=True, text=True, timeout=60, input=stdin)


def fast(body: dict, name: str | None = None, namespace: str = "default") -> dict:
    body["metadata"]["namespace"] = namespace
    if name:
        body["metadata"]["name"] = name
    body["spec"].setdefault("forecast", {})["stepSeconds"] = 1
    return body


def children(cluster, name: str, namespace: str = "default") -> dict[str, list[str]]:
    def owned(plural):
        return sorted(o["metadata"]["name"] for o in cluster.objects(plural, namespace)
                      if o["metadata"].get("labels", {}).get("forescale.io/deployment") == name)
    return {p: owned(p) for p in ("deployments", "services", "httproutes", "virtualservices")}


def reasons(cluster, name: str, namespace: str = "default") -> list[str]:
    events = [e for e in cluster.objects("events", namespace) if e["involvedObject"]["name"] == name]
    return [e["reason"] for e in sorted(events, key=lambda e: int(e["metadata"]["resourceVersion"]))]


def status(cluster, name: str, namespace: str = "default") -> dict:
    obj = cluster.get("inferencedeployments", namespace, name)
    return (obj or {}).get("status") or {}


def wait_converged(cluster, name: str, operator: OperatorProcess, namespace: str = "default") -> None:
    """Wait 30 s for `converged`; a timeout shows the resource's generation, phase and conditions as last read."""
    def seen() -> str:
        obj = cluster.get("inferencedeployments", namespace, name) or {}
        got = obj.get("status") or {}
        return (f"generation {obj.get('metadata', {}).get('generation')}, observedGeneration "
                f"{got.get('observedGeneration')}, phase {got.get('phase')}, conditions {got.get('conditions')}")
    wait_until(lambda: converged(cluster, name, namespace), 30, f"{namespace}/{name} converged", operator, seen)


def converged(cluster, name: str, namespace: str = "default") -> bool:
    """Ready=True for the current generation. The phase beyond readiness belongs to the forecast loop
    (e.g. Degraded when the spec's Prometheus is unreachable), so it is not what convergence means."""
    obj = cluster.get("inferencedeployments", namespace, name) or {}
    got = obj.get("status") or {}
    ready = next((c for c in got.get("conditions") or [] if c.get("type") == "Ready"), {})
    return (ready.get("status") == "True" and got.get("observedGeneration") == obj["metadata"].get("generation")
            and got.get("phase") not in (None, "Pending", "Invalid"))


needs_kubectl = pytest.mark.skipif(not KUBECTL.exists(), reason="bin/kubectl is installed by `make tools`")


@needs_kubectl
def test_examples_yield_children_status_events_and_printer_columns(cluster, start_operator, example):
    operator = start_operator()
    # Exactly what a user runs: the example files as shipped.
    applied = kubectl(cluster, "apply", "--validate=false", "-f", str(ROOT / "crds" / "examples"))
    assert applied.returncode == 0, applied.stderr
    for name in ("chat", "chat-full"):
        wait_converged(cluster, name, operator)
        assert children(cluster, name) == {"deployments": [f"{name}-a", f"{name}-b"],
                                           "services": sorted([name, f"{name}-a", f"{name}-b"]),
                                           "httproutes": [name], "virtualservices": []}
        route = cluster.get("httproutes", "default", name)
        assert [r["weight"] for r in route["spec"]["rules"][0]["backendRefs"]] == [100, 0]
        assert reasons(cluster, name)[0] == "PoolsCreated" and reasons(cluster, name).count("PoolsCreated") == 1
        got = status(cluster, name)
        assert got["weights"] == {"a": 100, "b": 0} and got["observedGeneration"] == 1
    table = kubectl(cluster, "get", "infd")
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["NAME", "PHASE", "A", "B", "WEIGHT-B", "FORECAST-P99", "SLO", "AGE"]
    cells = rows[0].split()
    assert cells[0] == "chat" and cells[1] in ("Stable", "Degraded") and cells[2:6] == ["2/2", "1/1", "0", "200"]
    by_category = kubectl(cluster, "get", "forescale")
    assert by_category.returncode == 0 and "chat-full" in by_category.stdout
    # The liveness endpoint (FORESCALE_HEALTH_PORT) and the operator's metrics (FORESCALE_METRICS_PORT) answer.
    import httpx
    assert httpx.get(f"http://127.0.0.1:{operator.env['FORESCALE_HEALTH_PORT']}/healthz", timeout=5).status_code == 200
    metrics = httpx.get(f"http://127.0.0.1:{operator.env['FORESCALE_METRICS_PORT']}/metrics", timeout=5).text
    ok_line = next(line for line in metrics.splitlines() if line.startswith('forescale_operator_reconciles_total{result="ok"}'))
    assert float(ok_line.split()[-1]) >= 2  # one per example at least


def test_updates_converge_and_delete_leaves_nothing(cluster, start_operator, example):
    operator = start_operator()
    cluster.put(fast(example()))
    wait_converged(cluster, "chat", operator)

    body = cluster.get("inferencedeployments", "default", "chat")
    body["spec"]["pools"]["a"]["minReplicas"] = 3
    body["spec"]["pools"]["b"]["template"]["spec"]["containers"][0]["image"] = "ghcr.io/forescale/model-server:0.2.0"
    body["spec"]["traffic"]["router"] = "istio"
    cluster.put(body)
    wait_until(lambda: cluster.get("deployments", "default", "chat-a")["spec"]["replicas"] == 3, 30, "scale to 3", operator)
    wait_until(lambda: children(cluster, "chat")["virtualservices"] == ["chat"]
               and children(cluster, "chat")["httproutes"] == [], 30, "router change", operator)
    image = cluster.get("deployments", "default", "chat-b")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.endswith(":0.2.0")
    wait_until(lambda: status(cluster, "chat").get("observedGeneration") == 2, 30, "observedGeneration 2", operator)
    assert {"ScaledUp", "PoolsUpdated"} <= set(reasons(cluster, "chat"))

    if KUBECTL.exists():
        assert kubectl(cluster, "delete", "infd", "chat", "--wait=false").returncode == 0
    else:
        cluster.delete("inferencedeployments", "default", "chat")
    wait_until(lambda: cluster.get("inferencedeployments", "default", "chat") is None, 30, "CR gone", operator)
    wait_until(lambda: children(cluster, "chat") == {"deployments": [], "services": [], "httproutes": [],
                                                     "virtualservices": []}, 30, "children gone", operator)


def test_restart_resumes_without_duplicates(cluster, start_operator, example):
    first = start_operator(name="first")
    cluster.put(fast(example()))
    wait_converged(cluster, "chat", first)
    assert first.stop() == 0
    # While no operator runs, the spec changes; the next one must pick it up on resume.
    body = cluster.get("inferencedeployments", "default", "chat")
    body["spec"]["pools"]["b"]["minReplicas"] = 2
    cluster.put(body)
    second = start_operator(name="second")
    wait_until(lambda: cluster.get("deployments", "default", "chat-b")["spec"]["replicas"] == 2, 30, "resume", second)
    assert children(cluster, "chat")["deployments"] == ["chat-a", "chat-b"]
    assert reasons(cluster, "chat").count("PoolsCreated") == 1
    creates = [r for r in cluster.request_log if r.verb == "create" and r.resource in ("deployments", "services")]
    assert len(creates) == 5  # two Deployments and three Services, once


def test_two_replicas_only_the_leader_acts_and_the_other_takes_over(cluster, start_operator, example):
    leader = start_operator(name="leader", POD_NAME="op-0", FORESCALE_PRIORITY="200")
    leader.wait_for_log("Peering 'forescale' with priority 200")
    standby = start_operator(name="standby", POD_NAME="op-1", FORESCALE_PRIORITY="100")
    standby.wait_for_log("Peering 'forescale' with priority 100")
    # Both replicas keep their records in the shared ClusterKopfPeering; the standby starts paused.
    wait_until(lambda: len((cluster.get("clusterkopfpeerings", None, "forescale") or {}).get("status") or {}) == 2,
               20, "two peers", standby)
    cluster.put(fast(example(), name="one"))
    wait_converged(cluster, "one", leader)

    # Every write the operator's own client made came from the leader; the standby wrote nothing.
    ours = {r.user_agent for r in cluster.request_log
            if r.verb in ("create", "update", "patch", "delete") and r.user_agent.startswith("forescale-operator/")}
    assert ours == {"forescale-operator/op-0"}
    # The standby read nothing but the peering object either: no handler, no loop ran there.
    standby_reads = {(r.verb, r.resource) for r in cluster.request_log if r.user_agent == "forescale-operator/op-1"}
    assert standby_reads <= {("get", "clusterkopfpeerings")}, standby_reads

    leader.stop()
    standby.wait_for_log("Resuming operations after the pause")
    cluster.put(fast(example(), name="two"))
    wait_converged(cluster, "two", standby)
    creates = {r.user_agent for r in cluster.request_log if r.verb == "create" and r.resource == "deployments"}
    assert creates == {"forescale-operator/op-0", "forescale-operator/op-1"}


def test_standalone_without_the_peering_crd(crds_dir, tmp_path, example):
    from forescale_devcluster.apiserver import start_apiserver

    handle = start_apiserver(crds_dir, ready_deployments=True)
    handle.set_served("clusterkopfpeerings", False)
    operator = OperatorProcess(handle, tmp_path / "op.log")
    try:
        operator.wait_for_log("Running standalone: the ClusterKopfPeering CRD (kopf.dev/v1) is not installed")
        handle.put(fast(example()))
        wait_converged(handle, "chat", operator)
        assert operator.log.count("Running standalone") == 1
    finally:
        operator.stop()
        handle.stop()


def test_api_errors_and_dropped_watches_are_retried(cluster, start_operator, example):
    operator = start_operator()
    cluster.inject_faults(409, count=2, resource="deployments", verbs={"create"})
    cluster.inject_faults(500, count=1, resource="services", verbs={"create"})
    cluster.inject_faults(429, count=1, resource="httproutes", verbs={"create"})
    cluster.put(fast(example()))
    wait_converged(cluster, "chat", operator)
    assert cluster.server.faults.pending() == 0, cluster.server.faults._faults
    assert children(cluster, "chat")["services"] == ["chat", "chat-a", "chat-b"]
    statuses = [r.status for r in cluster.request_log if r.verb == "create" and r.resource == "deployments"]
    assert statuses[:2] == [409, 409] and 201 in statuses

    cluster.drop_watches()
    body = cluster.get("inferencedeployments", "default", "chat")
    body["spec"]["pools"]["a"]["minReplicas"] = 3
    cluster.put(body)
    wait_until(lambda: cluster.get("deployments", "default", "chat-a")["spec"]["replicas"] == 3, 20,
               "converge after a dropped watch", operator)
    assert operator.process.poll() is None  # never a crash


def test_invalid_resource_does_not_stop_the_others_and_recovers(cluster, start_operator, example):
    operator = start_operator(args=("-n", "default"))
    bad = fast(example(), name="bad")
    bad["spec"]["pools"]["a"]["template"]["spec"]["containers"] = []
    cluster.put(bad)
    cluster.put(fast(example(), name="good"))
    wait_converged(cluster, "good", operator)
    wait_until(lambda: status(cluster, "bad").get("phase") == "Invalid", 30, "bad Invalid", operator)
    assert children(cluster, "bad")["deployments"] == []
    event = next(e for e in cluster.objects("events", "default") if e["involvedObject"]["name"] == "bad")
    assert event["type"] == "Warning" and event["reason"] == "InvalidSpec"
    assert "spec.pools.a.template.spec.containers: must list at least one container" in event["message"]

    fixed = cluster.get("inferencedeployments", "default", "bad")
    fixed["spec"]["pools"]["a"]["template"] = example()["spec"]["pools"]["a"]["template"]
    cluster.put(fixed)
    wait_converged(cluster, "bad", operator)
    assert children(cluster, "bad")["deployments"] == ["bad-a", "bad-b"]


@pytest.mark.parametrize("args, env, message", [
    (("-A",), {"FORESCALE_LOG_LEVEL": "chatty"}, "bad setting: FORESCALE_LOG_LEVEL: must be one of"),
    (("-A", "-n", "ml"), {}, "give either -n/--namespace or -A/--all-namespaces, not both"),
    (("-A",), {"KUBECONFIG": "/nonexistent/kubeconfig"}, "cannot load Kubernetes credentials"),
    (("-n", "ml", "-n", "Bad_NS"), {}, "bad setting: -n/--namespace: 'Bad_NS' is not a valid namespace name"),
    (("-n", "ml.team"), {}, "bad setting: -n/--namespace: 'ml.team' is not a valid namespace name"),
    (("-n", "ml\n"), {}, "bad setting: -n/--namespace: 'ml\\n' is not a valid namespace name"),
])
def test_bad_start_up_exits_with_a_clear_message(tmp_path, args, env, message):
    import sys

    full_env = dict(os.environ, HOME=str(tmp_path), **env)
    full_env.setdefault("KUBECONFIG", str(tmp_path / "none"))
    forescale = Path(sys.executable).parent / "forescale"
    result = subprocess.run([str(forescale), "operator", *args], env=full_env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and message in result.stderr
    assert "Traceback" not in result.stderr


def test_namespaced_operator_leaves_other_namespaces_alone(cluster, start_operator, example):
    operator = start_operator(args=("-n", "ml"))
    cluster.put(fast(example(), namespace="ml"))
    cluster.put(fast(example(), namespace="default"))
    wait_converged(cluster, "chat", operator, "ml")
    peering = cluster.get("kopfpeerings", "ml", "forescale")
    assert peering is not None  # namespaced operators peer in a KopfPeering per namespace
    assert children(cluster, "chat", "default")["deployments"] == []
    assert status(cluster, "chat", "default") == {}
