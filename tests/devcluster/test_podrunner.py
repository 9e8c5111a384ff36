"""The pod runner against a small fake API, with real local processes (`python -m http.server`)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import pytest
from fake_kube_api import FakeKubeApi, deployment

from forescale_devcluster.podrunner import PodRunner, deployment_status, template_hash
from forescale_devcluster.podrunner_pod import PORT_ANNOTATION, PodSettings, PodView
from forescale_devcluster.procs import http_ok

pytestmark = pytest.mark.timeout(60)

#: a real server that starts in ~50 ms and answers GET / with 200
HTTP_SERVER = ("{python}", "-m", "http.server", "--bind", "127.0.0.1", "{port}")


def fast_settings(**overrides) -> PodSettings:
    values = dict(command=HTTP_SERVER, readiness_path="/", startup_delay_seconds=0.3, probe_period_seconds=0.5,
                  backoff_base_seconds=0.2, backoff_cap_seconds=1.0, stop_grace_seconds=2.0, admin_token="t0ken",
                  drain_seconds=0.3)
    values.update(overrides)
    return PodSettings(**values)


@pytest.fixture
async def api():
    fake = FakeKubeApi()
    fake.url = await fake.start()
    yield fake
    await fake.stop()


async def eventually(check, timeout: float = 15.0, interval: float = 0.1):
    """Poll `check()` until it returns something truthy; fail with its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s (last value {value!r})")
        await asyncio.sleep(interval)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); its state letter says it is dead. Reaped between the two calls,
    # /proc/<pid>/stat is gone or unreadable (ESRCH): dead too.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


def ready_condition(pod: dict) -> str:
    return next(c["status"] for c in pod["status"]["conditions"] if c["type"] == "Ready")


async def test_brings_up_replicas_reports_ready_and_writes_file_sd(api, tmp_path):
    api.put(deployment("chat-a", replicas=3, pool="a"), "apis/apps/v1", "deployments")
    sd_path = str(tmp_path / "sd" / "pods.json")
    async with PodRunner(api.url, settings=fast_settings(), file_sd_path=sd_path, seed=1) as runner:
        views = await runner.wait_ready("ml", "chat-a", 3, timeout=20)
        status = await eventually(lambda: (api.get("apis/apps/v1", "deployments", "ml", "chat-a").get("status") or {})
                                  if (api.get("apis/apps/v1", "deployments", "ml", "chat-a").get("status") or {})
                                  .get("readyReplicas") == 3 else None)
        assert status["replicas"] == 3 and status["availableReplicas"] == 3 and status["updatedReplicas"] == 3
        assert status["observedGeneration"] == 1
        pods = api.items("api/v1", "pods", "ml")
        assert len(pods) == 3
        for pod in pods:
            assert pod["metadata"]["name"].startswith("chat-a-")
            assert pod["metadata"]["labels"]["forescale.io/pool"] == "a"
            assert pod["status"]["podIP"] == "127.0.0.1" and pod["status"]["phase"] == "Running"
            assert ready_condition(pod) == "True" and "startTime" in pod["status"]
            port = int(pod["metadata"]["annotations"][PORT_ANNOTATION])
            assert pod["spec"]["containers"][0]["ports"][0]["containerPort"] == port
            assert http_ok(f"http://127.0.0.1:{port}/")
        groups = json.load(open(sd_path))
        assert sorted(g["targets"][0] for g in groups) == sorted(f"127.0.0.1:{v.port}" for v in views)
        assert {g["labels"]["deployment"] for g in groups} == {"chat"}
        assert {g["labels"]["pool"] for g in groups} == {"a"}
        assert {g["labels"]["namespace"] for g in groups} == {"ml"}
        pids = [v.pid for v in views]
    # Clean shutdown: every process stopped, every Pod object deleted, no targets left.
    assert not any(pid_alive(pid) for pid in pids)
    assert api.items("api/v1", "pods") == []
    assert json.load(open(sd_path)) == []


async def test_scale_down_stops_the_newest_and_deletes_their_pods(api):
    api.put(deployment("chat-b", replicas=1, pool="b"), "apis/apps/v1", "deployments")
    async with PodRunner(api.url, settings=fast_settings(), seed=2) as runner:
        (first,) = await runner.wait_ready("ml", "chat-b", 1, timeout=20)
        api.get("apis/apps/v1", "deployments", "ml", "chat-b")["spec"]["replicas"] = 3
        views = await runner.wait_ready("ml", "chat-b", 3, timeout=20)
        pids = {v.name: v.pid for v in views}  # views are live; keep the PIDs of this moment
        api.get("apis/apps/v1", "deployments", "ml", "chat-b")["spec"]["replicas"] = 1
        (survivor,) = await runner.wait_ready("ml", "chat-b", 1, timeout=20)
        assert survivor.name == first.name
        gone = [pid for name, pid in pids.items() if name != first.name]
        await eventually(lambda: not any(pid_alive(pid) for pid in gone))
        await eventually(lambda: [p["metadata"]["name"] for p in api.items("api/v1", "pods")] == [first.name])
        await eventually(lambda: api.get("apis/apps/v1", "deployments", "ml", "chat-b")["status"]["replicas"] == 1)


async def test_a_removed_pod_drains_before_its_process_stops(api):
    api.put(deployment("chat-a", replicas=2, pool="a"), "apis/apps/v1", "deployments")
    async with PodRunner(api.url, settings=fast_settings(drain_seconds=3.0), seed=7) as runner:
        views = await runner.wait_ready("ml", "chat-a", 2, timeout=20)
        newest = max(views, key=lambda v: v.created)
        pid, url = newest.pid, newest.url
        api.get("apis/apps/v1", "deployments", "ml", "chat-a")["spec"]["replicas"] = 1
        await eventually(lambda: len(api.items("api/v1", "pods", "ml")) == 1, interval=0.02)
        # Its object is gone, yet it still answers whoever has not noticed yet...
        assert pid_alive(pid) and http_ok(url + "/")
        # ...and stops after the drain.
        await eventually(lambda: not pid_alive(pid))


async def test_a_killed_process_is_reported_and_restarted_after_backoff(api):
    api.put(deployment("chat-a", replicas=1, pool="a"), "apis/apps/v1", "deployments")
    # A 3 s back-off: the test reads the pod, then the Deployment, while it lasts (a loaded machine's event loop
    # can stall for a second).
    async with PodRunner(api.url, settings=fast_settings(backoff_base_seconds=3.0), seed=3) as runner:
        (view,) = await runner.wait_ready("ml", "chat-a", 1, timeout=20)
        old_pid = view.pid
        os.kill(old_pid, signal.SIGKILL)
        pod = lambda: api.get("api/v1", "pods", "ml", view.name)  # noqa: E731
        await eventually(lambda: pod()["status"]["containerStatuses"][0]["restartCount"] == 1
                         and ready_condition(pod()) == "False"
                         and pod()["status"]["containerStatuses"][0]["state"] == {"waiting": {"reason": "CrashLoopBackOff"}})
        await eventually(lambda: api.get("apis/apps/v1", "deployments", "ml", "chat-a")["status"]["readyReplicas"] == 0)
        (again,) = await runner.wait_ready("ml", "chat-a", 1, timeout=20)
        assert again.name == view.name and again.pid != old_pid and again.restarts == 1
        await eventually(lambda: ready_condition(pod()) == "True")


async def test_template_change_rolls_pods_without_losing_readiness(api):
    api.put(deployment("chat-a", replicas=2, pool="a", precision="fp16"), "apis/apps/v1", "deployments")
    async with PodRunner(api.url, settings=fast_settings(), seed=4) as runner:
        before = {v.name for v in await runner.wait_ready("ml", "chat-a", 2, timeout=20)}
        new = deployment("chat-a", replicas=2, pool="a", precision="int8")
        api.get("apis/apps/v1", "deployments", "ml", "chat-a")["spec"] = new["spec"]
        min_ready = 2
        deadline = time.monotonic() + 20
        while True:
            views = runner.pods("ml", "chat-a")
            min_ready = min(min_ready, sum(v.ready for v in views))
            if len(views) == 2 and all(v.ready for v in views) and not before & {v.name for v in views}:
                break
            assert time.monotonic() < deadline, f"roll did not finish: {views}"
            assert len(views) <= 3, "more than one surge pod"
            await asyncio.sleep(0.05)
        assert min_ready >= 1
        assert {v.labels["forescale.io/precision"] for v in views} == {"int8"}
        h = template_hash(new["spec"]["template"])
        assert all(v.template_hash == h for v in views)


async def test_each_template_gets_a_replica_set_and_the_next_revision(api):
    """The revision bookkeeping the diagnosis's rollout rule reads: new template -> next number; a rollback
    re-numbers the old ReplicaSet, whose creation time stays old."""
    api.put(deployment("chat-a", replicas=1, pool="a", precision="fp16"), "apis/apps/v1", "deployments")
    live = api.get("apis/apps/v1", "deployments", "ml", "chat-a")

    def revisions() -> dict:
        return {rs["metadata"]["name"]: rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                for rs in api.items("apis/apps/v1", "replicasets", "ml")}

    def revision() -> str | None:
        return (live["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision")

    first = dict(live["spec"])
    h1 = template_hash(first["template"])
    async with PodRunner(api.url, settings=fast_settings(), seed=8):
        await eventually(lambda: revision() == "1")
        assert revisions() == {f"chat-a-{h1}": "1"}
        rs = api.get("apis/apps/v1", "replicasets", "ml", f"chat-a-{h1}")
        assert rs["metadata"]["labels"]["forescale.io/pool"] == "a" and rs["metadata"]["labels"]["pod-template-hash"] == h1
        assert rs["metadata"]["ownerReferences"][0]["uid"] == live["metadata"]["uid"]

        live["spec"] = deployment("chat-a", replicas=1, pool="a", precision="int8")["spec"]
        h2 = template_hash(live["spec"]["template"])
        await eventually(lambda: revision() == "2")
        assert revisions() == {f"chat-a-{h1}": "1", f"chat-a-{h2}": "2"}

        live["spec"] = first  # a rollback: the old template's ReplicaSet, renumbered
        await eventually(lambda: revision() == "3")
        assert revisions() == {f"chat-a-{h1}": "3", f"chat-a-{h2}": "2"}

        del live["metadata"]["annotations"]  # a replace that drops the annotation: put back, not bumped
        await eventually(lambda: revision() == "3")
        await asyncio.sleep(1.2)
        assert revision() == "3" and len(revisions()) == 2


async def test_deleted_deployment_takes_its_pods_along(api):
    api.put(deployment("chat-a", replicas=2, pool="a"), "apis/apps/v1", "deployments")
    async with PodRunner(api.url, settings=fast_settings(), namespaces=["ml"], seed=5) as runner:
        pids = [v.pid for v in await runner.wait_ready("ml", "chat-a", 2, timeout=20)]
        del api.objects[("apis/apps/v1", "deployments")][("ml", "chat-a")]
        await eventually(lambda: runner.pods() == [] and api.items("api/v1", "pods") == [])
        await eventually(lambda: not any(pid_alive(pid) for pid in pids))


async def test_a_pod_deleted_through_the_api_is_stopped_and_replaced(api):
    api.put(deployment("chat-a", replicas=2, pool="a"), "apis/apps/v1", "deployments")
    async with PodRunner(api.url, settings=fast_settings(), seed=6) as runner:
        views = await runner.wait_ready("ml", "chat-a", 2, timeout=20)
        await asyncio.sleep(1.0)  # older than the runner's settling time
        victim, victim_pid = views[0].name, views[0].pid
        del api.objects[("api/v1", "pods")][("ml", victim)]
        await eventually(lambda: not pid_alive(victim_pid))
        replaced = await runner.wait_ready("ml", "chat-a", 2, timeout=20)
        assert victim not in {v.name for v in replaced}
        assert len(api.items("api/v1", "pods", "ml")) == 2


async def test_on_pod_ready_runs_before_the_pod_is_reported_ready_and_on_every_restart(api):
    api.put(deployment("chat-a", replicas=1, pool="a"), "apis/apps/v1", "deployments")
    seen: list[tuple[str, str, int]] = []

    async def hook(view: PodView) -> None:
        pod = api.get("api/v1", "pods", "ml", view.name)
        seen.append((view.name, ready_condition(pod), view.restarts))
        if view.restarts == 0:
            raise RuntimeError("a failing hook is logged, not fatal")

    async with PodRunner(api.url, settings=fast_settings(), on_pod_ready=hook) as runner:
        (view,) = await runner.wait_ready("ml", "chat-a", 1, timeout=20)
        os.kill(view.pid, signal.SIGKILL)
        await eventually(lambda: len(seen) == 2)
    assert seen == [(view.name, "False", 0), (view.name, "False", 1)]


async def test_stale_pods_of_a_dead_runner_are_removed_on_start(api):
    stale = {"metadata": {"name": "chat-a-old-xxxxx", "namespace": "ml",
                          "labels": {"forescale.io/deployment": "chat"},
                          "annotations": {"forescale.io/pod-runner": "true"}}}
    foreign = {"metadata": {"name": "someone-elses", "namespace": "ml", "labels": {"forescale.io/deployment": "chat"}}}
    api.put(stale, "api/v1", "pods")
    api.put(foreign, "api/v1", "pods")
    async with PodRunner(api.url, settings=fast_settings()):
        assert [p["metadata"]["name"] for p in api.items("api/v1", "pods")] == ["someone-elses"]


async def test_the_pod_limit_guards_the_machine(api):
    api.put(deployment("chat-a", replicas=5, pool="a"), "apis/apps/v1", "deployments")
    async with PodRunner(api.url, settings=fast_settings(), max_pods=2) as runner:
        await runner.wait_ready("ml", "chat-a", 2, timeout=20)
        await asyncio.sleep(0.6)
        assert len(runner.pods()) == 2
        assert "pod limit 2 reached" in runner.last_error


@pytest.mark.parametrize("kwargs, message", [
    ({"api_url": "127.0.0.1:80"}, "must start with http"),
    ({"api_url": "http://x", "poll_interval_seconds": 0}, "poll_interval_seconds must be > 0"),
    ({"api_url": "http://x", "settings": PodSettings(command=("{python}", "{nope}"))}, "unknown field 'nope'"),
    ({"api_url": "http://x", "settings": PodSettings(command=("{python}", "{0}"))}, "unknown field"),
    ({"api_url": "http://x", "settings": PodSettings(command=("{python", ))}, "not a valid template"),
    ({"api_url": "http://x", "settings": PodSettings(command=())}, "non-empty list"),
    ({"api_url": "http://x", "settings": PodSettings(startup_delay_seconds=-1)}, "startup_delay_seconds must be >= 0"),
    ({"api_url": "http://x", "settings": PodSettings(probe_period_seconds=0)}, "probe_period_seconds must be > 0"),
    ({"api_url": "http://x", "settings": PodSettings(probe_failure_threshold=0)}, "probe_failure_threshold"),
    ({"api_url": "http://x", "settings": PodSettings(readiness_path="readyz")}, "must start with '/'"),
])
def test_bad_runner_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PodRunner(**kwargs)


@pytest.mark.parametrize("ready, template_hashes, desired, expected", [
    ([True, True], ["h", "h"], 2, {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "unavailableReplicas": 0}),
    ([True, False], ["h", "h"], 2, {"replicas": 2, "readyReplicas": 1, "updatedReplicas": 2, "unavailableReplicas": 1}),
    ([True, True, False], ["old", "old", "h"], 2, {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 1,
                                                     "unavailableReplicas": 0}),
    ([], [], 0, {"replicas": 0, "readyReplicas": 0, "updatedReplicas": 0, "unavailableReplicas": 0}),
])
def test_deployment_status_counts(ready, template_hashes, desired, expected):
    views = [PodView("ml", f"p{i}", "d", {}, 1000 + i, h, float(i), ready=r) for i, (r, h) in
             enumerate(zip(ready, template_hashes))]
    dep = {"metadata": {"generation": 7}, "spec": {"replicas": desired}}
    status = deployment_status(dep, views, "h")
    assert {k: status[k] for k in expected} == expected
    assert status["observedGeneration"] == 7 and status["availableReplicas"] == status["readyReplicas"]


@pytest.mark.parametrize("args, message", [
    (["--api", "nope"], "must start with http"),
    (["--api", "http://x", "--command", "python {nope}"], "unknown field 'nope'"),
])
def test_command_line_bad_input(capsys, args, message):
    from forescale_devcluster.podrunner import main

    assert main(args) == 2
    assert message in capsys.readouterr().err
