"""The stand-ins together on the real emulated API server, with real `forescale serve --emulate-gpu` pods.

One chained scenario, as the demo will run it: Deployments, Services and an
HTTPRoute shaped like the operator's, the pod runner starting real
emulated-GPU servers, the gateway splitting load-generator traffic 70/30, the
admin token reaching the pods, and Prometheus scraping them through file_sd.
"""

from __future__ import annotations

import asyncio
import os
import time

import aiohttp
import pytest
from fake_kube_api import deployment

from forescale_devcluster.apiserver import start_apiserver
from forescale_devcluster.arrivals import RateProfile
from forescale_devcluster.gateway import Gateway
from forescale_devcluster.loadgen import LoadGenerator
from forescale_devcluster.podrunner import PodRunner
from forescale_devcluster.podrunner_pod import PodSettings
from forescale_devcluster.prometheus_process import PrometheusProcess, find_prometheus

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

CRDS = os.path.join(os.path.dirname(__file__), "..", "..", "crds")
TOKEN = "test-admin-token"


def service(name: str, pool: str | None) -> dict:
    selector = {"forescale.io/deployment": "chat"} | ({"forescale.io/pool": pool} if pool else {})
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"selector": selector, "ports": [{"port": 80, "targetPort": 8080}]}}


def route(weight_a: int, weight_b: int) -> dict:
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "chat", "namespace": "ml"},
            "spec": {"parentRefs": [{"name": "inference-gateway"}],
                     "rules": [{"backendRefs": [{"name": "chat-a", "port": 80, "weight": weight_a},
                                                {"name": "chat-b", "port": 80, "weight": weight_b}]}]}}


@pytest.fixture
def ml_apiserver():
    handle = start_apiserver(CRDS, namespaces=("default", "ml"))
    yield handle
    handle.stop()


async def test_stand_ins_on_the_emulated_api_with_real_model_servers(ml_apiserver, tmp_path):
    apiserver = ml_apiserver
    for obj in (deployment("chat-a", replicas=2, pool="a", precision="fp16"),
                deployment("chat-b", replicas=1, pool="b", precision="int8"),
                service("chat-a", "a"), service("chat-b", "b"), service("chat", None), route(70, 30)):
        apiserver.put(obj)
    sd = str(tmp_path / "pods.json")
    settings = PodSettings(startup_delay_seconds=1.0, admin_token=TOKEN, log_dir=str(tmp_path / "logs"))
    prom = PrometheusProcess(pod_sd_file=sd, static_jobs={"gateway": []}) if find_prometheus() else None
    async with PodRunner(apiserver.url, namespaces=["ml"], settings=settings, file_sd_path=sd, seed=0) as runner:
        pods_a = await runner.wait_ready("ml", "chat-a", 2, timeout=40)
        (pod_b,) = await runner.wait_ready("ml", "chat-b", 1, timeout=40)
        deadline = time.monotonic() + 10
        while (apiserver.get("deployments", "ml", "chat-a").get("status") or {}).get("readyReplicas") != 2:
            assert time.monotonic() < deadline, apiserver.get("deployments", "ml", "chat-a")
            await asyncio.sleep(0.1)
        status = apiserver.get("deployments", "ml", "chat-a")["status"]
        assert status["availableReplicas"] == 2 and status["updatedReplicas"] == 2
        assert status["observedGeneration"] == apiserver.get("deployments", "ml", "chat-a")["metadata"]["generation"]
        api_pods = apiserver.objects("pods", "ml")
        assert len(api_pods) == 3
        assert all(p["metadata"]["ownerReferences"][0]["kind"] == "Deployment" for p in api_pods)

        async with aiohttp.ClientSession() as session:
            # The server took its labels from the pod env, and the runner's token opens the admin API.
            async with session.get(pod_b.url + "/metrics") as resp:
                text = await resp.text()
            assert 'deployment="chat"' in text and 'pool="b"' in text and 'precision="int8"' in text
            async with session.post(pods_a[0].url + "/admin/faults", json={"slowdown": 1.0, "seconds": 1},
                                    headers={"Authorization": f"Bearer {TOKEN}"}) as resp:
                assert resp.status == 200, await resp.text()
            async with session.post(pods_a[0].url + "/admin/faults", json={"slowdown": 1.0, "seconds": 1}) as resp:
                assert resp.status == 401

        if prom is not None:
            prom.start()
        try:
            async with Gateway(apiserver.url, "ml", "chat", refresh_seconds=0.5) as gw:
                if prom is not None:
                    prom.set_targets("gateway", [f"127.0.0.1:{gw.port}"])
                records = await LoadGenerator(gw.url, RateProfile((30.0,), 3.0), duration_seconds=3.0,
                                              process="uniform", timeout_seconds=5).run()
                assert len(records) >= 85 and all(r.status == 200 for r in records), {r.status for r in records}
                share_a = sum(r.backend == "chat-a" for r in records) / len(records)
                assert abs(share_a - 0.7) <= 0.03
                assert gw.requests_by_backend() == {"chat-a": round(share_a * len(records)),
                                                    "chat-b": len(records) - round(share_a * len(records))}
                if prom is not None:
                    await asyncio.to_thread(prom.wait_for_targets_up, "pods", 3, 20)
                    deadline = time.monotonic() + 20
                    while True:
                        rows = await asyncio.to_thread(
                            prom.query, 'sum by (pool) (forescale_requests_total{deployment="chat"})')
                        counts = {r["metric"]["pool"]: float(r["value"][1]) for r in rows}
                        if sum(counts.values()) >= len(records):
                            break
                        assert time.monotonic() < deadline, counts
                        await asyncio.sleep(0.5)
                    assert set(counts) == {"a", "b"}
        finally:
            if prom is not None:
                prom.stop()
        pids = [v.pid for v in runner.pods()]
    assert apiserver.objects("pods", "ml") == []
    assert all(not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z"
               for pid in pids)


async def test_scaling_under_load_loses_no_request(ml_apiserver, tmp_path):
    apiserver = ml_apiserver
    for obj in (deployment("chat-a", replicas=3, pool="a"), deployment("chat-b", replicas=0, pool="b"),
                service("chat-a", "a"), service("chat-b", "b"), route(100, 0)):
        apiserver.put(obj)
    settings = PodSettings(startup_delay_seconds=1.0, log_dir=str(tmp_path / "logs"))
    scale_url = apiserver.url + "/apis/apps/v1/namespaces/ml/deployments/chat-a/scale"

    async def scale(session: aiohttp.ClientSession, replicas: int) -> None:
        async with session.patch(scale_url, json={"spec": {"replicas": replicas}},
                                 headers={"Content-Type": "application/merge-patch+json"}) as resp:
            assert resp.status == 200, await resp.text()

    async with PodRunner(apiserver.url, namespaces=["ml"], settings=settings) as runner:
        await runner.wait_ready("ml", "chat-a", 3, timeout=40)
        async with Gateway(apiserver.url, "ml", "chat") as gw, aiohttp.ClientSession() as session:
            load = asyncio.create_task(LoadGenerator(gw.url, RateProfile((30.0,), 6.0), duration_seconds=6.0,
                                                     process="uniform", timeout_seconds=5).run())
            await asyncio.sleep(1.0)
            await scale(session, 1)          # two pods leave while requests flow
            await asyncio.sleep(2.0)
            await scale(session, 2)          # one comes back
            records = await load
        assert len(runner.pods("ml", "chat-a")) == 2
    assert len(records) >= 170
    bad = [(r.scheduled_s, r.status, r.error) for r in records if r.status != 200]
    assert bad == []
