"""One emulated pod: its manifest, environment, precision and command line."""

from __future__ import annotations

import base64
import sys

import pytest
from fake_kube_api import FakeKubeApi, deployment

from forescale_devcluster.podrunner_kubeapi import KubeApi
from forescale_devcluster.podrunner_pod import DEFAULT_COMMAND, LocalPod, PodSettings


@pytest.fixture
async def api():
    fake = FakeKubeApi()
    fake.url = await fake.start()
    fake.put({"metadata": {"name": "tokens", "namespace": "ml"},
              "data": {"admin": base64.b64encode(b"from-secret").decode()}}, "api/v1", "secrets")
    client = KubeApi(fake.url)
    yield client
    await client.close()
    await fake.stop()


def make_pod(api: KubeApi, env: list[dict] | None = None, labels: dict | None = None, **settings) -> LocalPod:
    dep = deployment("chat-a", replicas=1, pool="a", precision="fp16")
    dep["metadata"]["uid"] = "uid-1"
    container = dep["spec"]["template"]["spec"]["containers"][0]
    if env is not None:
        container["env"] = env
    if labels is not None:
        dep["spec"]["template"]["metadata"]["labels"] = labels
    return LocalPod(api, PodSettings(**settings), namespace="ml", name="chat-a-abc-xyz12", deployment=dep,
                    template_hash="abc", port=41234, on_change=lambda: None)


@pytest.mark.parametrize("env, labels, precision", [
    (None, None, "fp16"),                                                       # from the container env
    ([], {"forescale.io/precision": "int8"}, "int8"),                           # from the pod label
    ([], {}, "fp16"),                                                           # the default
    ([{"name": "FORESCALE_PRECISION", "value": "bf16"}], {"forescale.io/precision": "int8"}, "bf16"),
])
async def test_precision_comes_from_env_then_label_then_default(api, env, labels, precision):
    assert make_pod(api, env, labels).precision() == precision


async def test_environment_resolves_values_field_refs_and_secrets(api):
    env = [{"name": "A", "value": 1},
           {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
           {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
           {"name": "POOL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['forescale.io/pool']"}}},
           {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "tokens", "key": "admin"}}},
           {"name": "MISSING", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "admin"}}},
           {"name": "OMP_NUM_THREADS", "value": "8"}]
    result = await make_pod(api, env, admin_token="runner-token").environment()
    assert {k: result[k] for k in ("A", "POD", "NS", "IP", "POOL", "SECRET")} == {
        "A": "1", "POD": "chat-a-abc-xyz12", "NS": "ml", "IP": "127.0.0.1", "POOL": "a", "SECRET": "from-secret"}
    assert "MISSING" not in result
    # The runner's settings come last: thread limits protect the shared cores.
    assert result["OMP_NUM_THREADS"] == "1" and result["FORESCALE_ADMIN_TOKEN"] == "runner-token"
    assert result["HOSTNAME"] == "chat-a-abc-xyz12"


async def test_no_admin_token_means_none_is_set(api, monkeypatch):
    monkeypatch.delenv("FORESCALE_ADMIN_TOKEN", raising=False)
    assert "FORESCALE_ADMIN_TOKEN" not in await make_pod(api).environment()


async def test_manifest_carries_port_labels_and_owner(api):
    manifest = make_pod(api).manifest()
    meta = manifest["metadata"]
    assert meta["labels"] == {"forescale.io/deployment": "chat", "forescale.io/pool": "a",
                              "forescale.io/precision": "fp16", "pod-template-hash": "abc"}
    assert meta["annotations"]["forescale.io/port"] == "41234"
    assert meta["ownerReferences"][0] | {} == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "chat-a",
                                               "uid": "uid-1", "controller": True, "blockOwnerDeletion": True}
    container = manifest["spec"]["containers"][0]
    assert container["ports"] == [{"name": "http", "containerPort": 41234, "protocol": "TCP"}]
    assert container["image"] == "forescale/server:dev" and manifest["spec"]["nodeName"] == "local"
    assert "status" not in manifest


async def test_default_command_runs_the_emulated_gpu_server(api):
    argv = make_pod(api, command=DEFAULT_COMMAND).argv()
    assert argv == [sys.executable, "-m", "forescale_cli.main", "serve", "--emulate-gpu", "demo", "--host",
                    "127.0.0.1", "--port", "41234", "--precision", "fp16", "--enable-faults"]


async def test_status_reports_readiness_and_restarts(api):
    pod = make_pod(api)
    pending = pod.status()
    assert pending["phase"] == "Pending" and pending["podIP"] == "127.0.0.1"
    pod.view.running, pod.view.ready = True, True
    running = pod.status()
    assert running["phase"] == "Running"
    assert {c["type"]: c["status"] for c in running["conditions"]}["Ready"] == "True"
    pod.view.running, pod.view.ready, pod.view.restarts = False, False, 2
    crashed = pod.status(waiting_reason="CrashLoopBackOff")
    assert crashed["phase"] == "Running" and crashed["containerStatuses"][0]["restartCount"] == 2
    assert crashed["containerStatuses"][0]["state"] == {"waiting": {"reason": "CrashLoopBackOff"}}


# --- secret volumes, written locally and pointed at through the environment ------------------------

def token_volume(secret: str = "tokens", key: str = "admin", kind: str = "projected", **source) -> dict:
    items = [{"key": key, "path": "token"}]
    if kind == "projected":
        return {"name": "tok", "projected": {"sources": [{"secret": {"name": secret, "items": items, **source}}]}}
    return {"name": "tok", "secret": {"secretName": secret, "items": items, **source}}


def pod_with_volume(api, volume: dict | None, env_file: str = "/var/run/forescale/token") -> LocalPod:
    pod = make_pod(api, [{"name": "FORESCALE_ADMIN_TOKEN_FILE", "value": env_file}])
    spec = pod.template["spec"]
    if volume is not None:
        spec["volumes"] = [volume]
        spec["containers"][0]["volumeMounts"] = [{"name": "tok", "mountPath": "/var/run/forescale", "readOnly": True}]
    return pod


@pytest.mark.parametrize("kind", ["projected", "secret"])
async def test_a_secret_volume_is_written_and_the_env_points_at_it(api, kind):
    pod = pod_with_volume(api, token_volume(kind=kind))
    try:
        assert await pod._mount_volumes()
        path = (await pod.environment())["FORESCALE_ADMIN_TOKEN_FILE"]
        assert path != "/var/run/forescale/token" and path.endswith("/tok/token")
        with open(path) as handle:
            assert handle.read() == "from-secret"
    finally:
        await pod.stop(delete=False, drain=False)


async def test_a_token_file_with_no_volume_keeps_its_path_and_so_is_missing(api):
    # what crds/examples/full.yaml once did: the server finds no file there and exits 2
    pod = pod_with_volume(api, None)
    assert await pod._mount_volumes()
    assert (await pod.environment())["FORESCALE_ADMIN_TOKEN_FILE"] == "/var/run/forescale/token"


@pytest.mark.parametrize("volume, reason", [
    (token_volume(secret="nope"), 'secret "nope" not found'),
    (token_volume(key="other"), 'secret "tokens" has no key "other"'),
])
async def test_a_missing_secret_or_key_keeps_the_pod_creating(api, volume, reason, caplog):
    pod = pod_with_volume(api, volume)
    try:
        assert not await pod._mount_volumes()
        assert not await pod._mount_volumes()
        said = [r.getMessage() for r in caplog.records if "MountVolume.SetUp failed" in r.getMessage()]
        assert len(said) == 1 and reason in said[0]  # said once, not at every retry
    finally:
        await pod.stop(delete=False, drain=False)


async def test_an_optional_missing_secret_mounts_an_empty_folder(api):
    pod = pod_with_volume(api, token_volume(secret="nope", optional=True))
    try:
        assert await pod._mount_volumes()
    finally:
        await pod.stop(delete=False, drain=False)
