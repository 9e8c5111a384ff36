"""`forescale diagnose` (forescale_operator.diagnose_cli) with its clients injected: a fake Kubernetes API
and a fake Prometheus answering by query. Bad input, an unknown resource, Prometheus down, and real answers."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from forescale_devcluster.procs import free_port
from forescale_devcluster.prometheus_process import PrometheusProcess
from forescale_operator.diagnose_cli import DiagnoseRequest, prometheus_url, run
from forescale_operator.diagnosis.gather import Windows, queries
from forescale_operator.kube.errors import ApiUnavailable
from forescale_predictor.errors import MetricsUnavailable

NOW = 1_790_000_000.0
RESOURCE = {"apiVersion": "forescale.io/v1alpha1", "kind": "InferenceDeployment",
            "metadata": {"name": "chat", "namespace": "ml"}, "spec": {"slo": {"targetLatencyMs": 200}}}
#: what a healthy pool a answers, both windows
HEALTHY = {"rate_rps": 100.0, "error_ratio": 0.0, "queue_depth": 2.0, "batch_size_mean": 8.0, "queue_wait_ms": 5.0,
           "preprocess_ms": 1.0, "compute_ms": 40.0, "postprocess_ms": 1.0, "compute_per_item_ms": 5.0,
           "result_cache_hit_ratio": 0.8,
           "kv_used_ratio": 0.6, "kv_fragmentation_ratio": 0.05, "gpu_memory_bytes": 1e10, "gpu_utilisation_ratio": 0.6,
           "input_tokens_mean": 40.0, "output_tokens_mean": 20.0}
PODS = {"chat-a-1": 120.0, "chat-a-2": 125.0}
DEPLOYMENT = {"metadata": {"name": "chat-a", "annotations": {"deployment.kubernetes.io/revision": "1"}}}


class FakeKube:
    """The reads the command makes: the resource, the pool's pods, Deployment and ReplicaSets."""

    def __init__(self, objects: dict[tuple[str, str], dict] | None = None, lists: dict[str, list] | None = None,
                 fail: Exception | None = None):
        self.objects = objects if objects is not None else {("inferencedeployments", "chat"): RESOURCE,
                                                            ("deployments", "chat-a"): DEPLOYMENT}
        self.lists = lists if lists is not None else {"pods": [], "replicasets": []}
        self.fail = fail

    async def get(self, ref, namespace, name):
        if self.fail:
            raise self.fail
        return self.objects.get((ref.plural, name))

    async def list(self, ref, namespace, label_selector=None):
        if ref.plural not in self.lists:
            raise ApiUnavailable("connection reset", method="GET", path=ref.path(namespace))
        return self.lists[ref.plural]


class FakeProm:
    """Answers by query key (`rate_rps.now`); an exception answers every query when given."""

    def __init__(self, answers: dict[str, object] | None = None, error: Exception | None = None, pods=PODS):
        self._keys = {text: key for key, text in queries("ml", "chat", "a", Windows()).items()}
        self.answers = answers or {}
        self.error, self.pods = error, pods
        self.closed = False

    async def scalar(self, query):
        if self.error:
            raise self.error
        return self.answers.get(self._keys[query])

    async def vector(self, query):
        if self.error:
            raise self.error
        return self.pods

    async def close(self):
        self.closed = True


def _both(values: dict[str, float]) -> dict[str, float]:
    return {f"{k}.{side}": v for k, v in values.items() for side in ("now", "before")} | {"oom_warnings.now": 0.0}


async def _run(request: DiagnoseRequest, kube=None, prom=None, env=None):
    out, err = io.StringIO(), io.StringIO()
    made = []

    def make_prom(url, timeout_s, at):
        made.append((url, timeout_s, at))
        return prom

    code = await run(request, kube=kube or FakeKube(), make_prom=make_prom, env=env or {}, out=out, err=err,
                     clock=lambda: NOW)
    return code, out.getvalue(), err.getvalue(), made


REQUEST = DiagnoseRequest(name="chat", namespace="ml", prometheus_url="http://prom:9090")


async def test_a_healthy_pool_suspects_nothing_and_every_rule_decides():
    prom = FakeProm(_both(HEALTHY))
    code, out, err, made = await _run(REQUEST, prom=prom)
    assert (code, err) == (0, "")
    assert made == [("http://prom:9090", 5.0, NOW)] and prom.closed
    assert "InferenceDeployment ml/chat, pool a, at 2026-09-21T14:13:20Z" in out
    assert "Prometheus: http://prom:9090 (from --prometheus-url)" in out
    assert "No cause suspected." in out
    rows = [line.split()[1:3] for line in out.splitlines() if line[:2].strip().isdigit()]
    assert len(rows) == 7 and {status for _, status in rows} == {"clear"}
    assert "  the model server has no prefix cache, so no prefix (KV) cache hit series (kv_hit_ratio)" in out


async def test_a_cause_is_ranked_first_with_its_numbers():
    answers = _both(HEALTHY) | {"input_tokens_mean.now": 160.0, "compute_ms.now": 90.0, "compute_per_item_ms.now": 11.25}
    code, out, _, _ = await _run(REQUEST, prom=FakeProm(answers))
    assert code == 0
    first = next(line for line in out.splitlines() if line.startswith(" 1 "))
    assert first.split()[1:4] == ["request-mix", "suspected", "1.00"] and "input 160 tokens (was 40)" in first
    assert "Top cause: request-mix. Request mix changed suspected (request-mix): input 160 tokens (was 40)" in out


@pytest.mark.parametrize("health, ago, status, why", [
    (2.3, 0, "suspected", None),  # the operator's latency model: 2.3x slower than it predicts at this load
    (1.0, 0, "clear", None),
    (None, 0, "clear", "status.pools.a.model.health is not set (no model fitted yet)"),
    (2.3, 600, "clear", "--ago: the latency model's health is known only now"),  # today's model says nothing of then
])
async def test_the_latency_models_health_is_read_from_status_now(health, ago, status, why):
    resource = {**RESOURCE, "status": {"pools": {"a": {"model": {"health": health}}}}} if health else RESOURCE
    kube = FakeKube(objects={("inferencedeployments", "chat"): resource, ("deployments", "chat-a"): DEPLOYMENT})
    # batches twice the size: per-item compute cannot see a slowdown they amortise, the model's health can
    prom = FakeProm(_both(HEALTHY) | {"batch_size_mean.now": 16.0})
    if ago:
        prom._keys = {text: key for key, text in queries("ml", "chat", "a", Windows(ago_seconds=ago)).items()}
    request = DiagnoseRequest(name="chat", namespace="ml", prometheus_url="http://prom:9090", json_out=True, ago_seconds=ago)
    code, out, _, _ = await _run(request, kube=kube, prom=prom)
    report = json.loads(out)
    degraded = next(f for f in report["findings"] if f["cause"] == "degraded-pods")
    assert code == 0 and degraded["status"] == status
    assert report["evidence"]["model_health"] == (health if not ago else None)
    assert report["evidence"]["missing_why"].get("model_health") == why


async def test_json_is_one_object_with_the_diagnosis_and_the_evidence():
    answers = _both(HEALTHY) | {"oom_warnings.now": 4.0}
    code, out, _, _ = await _run(DiagnoseRequest(name="chat", namespace="ml", json_out=True,
                                                 prometheus_url="http://prom:9090"), prom=FakeProm(answers))
    assert code == 0
    report = json.loads(out)
    assert (report["resource"], report["pool"], report["at"], report["top"]) == ("ml/chat", "a", "2026-09-21T14:13:20Z",
                                                                                 "memory-pressure")
    assert report["findings"][0]["summary"].startswith("0 container(s) OOMKilled; 0 restart(s); 4 out-of-memory")
    assert report["evidence"]["oom_warnings"] == 4.0 and report["evidence"]["pod_p99_ms"] == PODS
    assert report["prometheus"] == "http://prom:9090" and report["notes"] == []


async def test_prometheus_unreachable_is_every_rule_unknown_with_the_reason_and_exit_0():
    down = FakeProm(error=MetricsUnavailable("cannot reach Prometheus at http://prom:9090: connection refused"))
    kube = FakeKube(lists={})  # the pod and ReplicaSet reads fail too: nothing at all to go on
    code, out, err, _ = await _run(REQUEST, kube=kube, prom=down)
    assert (code, err) == (0, "")
    rows = [line.split()[1:3] for line in out.splitlines() if line[:2].strip().isdigit()]
    assert len(rows) == 7 and {status for _, status in rows} == {"unknown"}
    assert "No cause suspected; 7 of 7 rules could not tell" in out
    assert "cannot reach Prometheus at http://prom:9090: connection refused" in out
    assert "Traceback" not in out + err and down.closed


async def test_with_prometheus_down_the_kubernetes_facts_still_decide_their_rules():
    down = FakeProm(error=MetricsUnavailable("cannot reach Prometheus at http://prom:9090: connection refused"))
    code, out, _, _ = await _run(DiagnoseRequest(name="chat", namespace="ml", json_out=True,
                                                 prometheus_url="http://prom:9090"), prom=down)
    statuses = {f["cause"]: f["status"] for f in json.loads(out)["findings"]}
    assert code == 0 and statuses["rollout"] == "clear" and statuses["memory-pressure"] == "clear"
    assert {c for c, s in statuses.items() if s == "unknown"} == {"overload", "degraded-pods", "bad-pod", "cache-failure",
                                                                   "request-mix"}


async def test_no_prometheus_url_anywhere_says_how_to_give_one():
    code, out, _, made = await _run(DiagnoseRequest(name="chat", namespace="ml"), prom=None)
    assert code == 0 and made == []
    assert "Prometheus: none (no Prometheus URL: pass --prometheus-url" in out
    assert "no Prometheus URL: pass --prometheus-url, set spec.metrics.prometheusUrl or FORESCALE_PROMETHEUS_URL" in out


async def test_an_unknown_resource_is_one_line_and_exit_2():
    code, out, err, made = await _run(DiagnoseRequest(name="nope", namespace="ml", prometheus_url="http://p:9090"))
    assert (code, out, made) == (2, "", [])
    assert err == "forescale diagnose: InferenceDeployment ml/nope not found\n"


async def test_an_unreachable_kubernetes_api_is_one_line_and_exit_1():
    kube = FakeKube(fail=ApiUnavailable("ClientConnectorError: connection refused", method="GET", path="/apis/x"))
    code, out, err, _ = await _run(REQUEST, kube=kube)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith("forescale diagnose: cannot read InferenceDeployment ml/chat: GET /apis/x: 0 Unavailable")


BAD_REQUESTS = [
    (DiagnoseRequest(name="chat", namespace="ml", pool="c"), "--pool must be a or b, got 'c'"),
    (DiagnoseRequest(name="chat", namespace="ml", prometheus_url="prom:9090"), "--prometheus-url must be an http(s) URL"),
    (DiagnoseRequest(name="chat", namespace="ml", ago_seconds=-5), "--ago must be a number of seconds >= 0, got -5"),
    (DiagnoseRequest(name="chat", namespace="ml", ago_seconds=float("nan")), "--ago must be a number of seconds >= 0, got nan"),
    (DiagnoseRequest(name="chat", namespace="ml", timeout_s=0), "--timeout must be a number of seconds in (0, 60], got 0"),
    (DiagnoseRequest(name="chat", namespace="ml", timeout_s=float("inf")), "--timeout must be a number of seconds in (0, 60]"),
    (DiagnoseRequest(name="../etc", namespace="ml"), "NAME '../etc' is not a valid Kubernetes name"),
    (DiagnoseRequest(name="chat", namespace="ML"), "--namespace 'ML' is not a valid Kubernetes name"),
]


@pytest.mark.parametrize("request_,message", BAD_REQUESTS, ids=[m.split(" ")[0] + str(i) for i, (_, m) in enumerate(BAD_REQUESTS)])
async def test_bad_options_are_one_line_naming_the_option_and_exit_2(request_, message):
    code, out, err, made = await _run(request_)
    assert (code, out, made) == (2, "", [])
    assert err == f"forescale diagnose: {err.split(': ', 1)[1]}" and message in err and err.count("\n") == 1


# (flag, spec.metrics.prometheusUrl, FORESCALE_PROMETHEUS_URL, URL used, where from)
URL_CASES = [
    ("http://flag:9090", "http://spec:9090", "http://env:9090", "http://flag:9090", "--prometheus-url"),
    (None, "http://spec:9090", "http://env:9090", "http://spec:9090", "spec.metrics.prometheusUrl"),
    (None, None, "http://env:9090", "http://env:9090", "FORESCALE_PROMETHEUS_URL"),
    (None, "not-a-url", "http://env:9090", "http://env:9090", "FORESCALE_PROMETHEUS_URL"),
    (None, None, "ftp://env", None, "FORESCALE_PROMETHEUS_URL is not an http(s) URL: 'ftp://env'"),
    (None, None, None, None, "no Prometheus URL: pass --prometheus-url, set spec.metrics.prometheusUrl or FORESCALE_PROMETHEUS_URL"),
]


@pytest.mark.parametrize("flag,spec_url,env_url,url,source", URL_CASES)
def test_the_prometheus_url_comes_from_the_flag_then_the_spec_then_the_environment(flag, spec_url, env_url, url, source):
    resource = {"spec": {"metrics": {"prometheusUrl": spec_url}}} if spec_url else {"spec": {}}
    env = {"FORESCALE_PROMETHEUS_URL": env_url} if env_url else {}
    assert prometheus_url(DiagnoseRequest(name="c", namespace="n", prometheus_url=flag), resource, env) == (url, source)


async def test_another_metrics_preset_is_noted():
    resource = {**RESOURCE, "spec": {"metrics": {"preset": "vllm"}}}
    kube = FakeKube(objects={("inferencedeployments", "chat"): resource})
    code, out, _, _ = await _run(REQUEST, kube=kube, prom=FakeProm(_both(HEALTHY)))
    assert code == 0 and "Note: the checklist reads the forescale_* series" in out and "preset is 'vllm'" in out


async def test_ago_reaches_back_with_offsets_and_the_facts_window_ends_there():
    seen = []

    class Recording(FakeProm):
        async def scalar(self, query):
            seen.append(query)
            return await super().scalar(query)

    prom = Recording(_both(HEALTHY))
    prom._keys = {text: key for key, text in queries("ml", "chat", "a", Windows(ago_seconds=1200)).items()}
    restarted_at = "2026-09-21T13:50:00Z"  # 23 min before NOW: inside the window ending 20 min ago
    pod = {"status": {"containerStatuses": [{"lastState": {"terminated": {"reason": "OOMKilled", "finishedAt": restarted_at}}}]}}
    kube = FakeKube(lists={"pods": [pod], "replicasets": []})
    code, out, _, _ = await _run(DiagnoseRequest(name="chat", namespace="ml", json_out=True, ago_seconds=1200,
                                                 prometheus_url="http://p:9090"), kube=kube, prom=prom)
    report = json.loads(out)
    assert code == 0 and report["at"] == "2026-09-21T13:53:20Z"
    assert all(" offset 1200s)" in q or " offset 1230s)" in q for q in seen)
    assert report["evidence"]["oom_killed_containers"] == 1 and report["top"] == "memory-pressure"


# -- the real command: the emulated API server (kubeconfig), a real Prometheus holding a backfilled incident ----

needs_prometheus = pytest.mark.skipif(shutil.which("prometheus") is None or shutil.which("promtool") is None,
                                      reason="prometheus/promtool not installed (apt-get install -y prometheus)")
STEP = 15
POD_LABELS = 'namespace="ml",deployment="chat",pool="a",precision="fp16",pod="{pod}"'


def _incident_openmetrics(end: int) -> str:
    """20 minutes of two healthy encoder pods of ml/chat pool a, 50 rps each; in the last 30 s (the diagnosis's
    "now") the inputs are four times longer (40 -> 160 tokens): a request-mix shift and nothing else."""
    families: dict[str, tuple[str, list[str]]] = {}

    def add(family: str, kind: str, sample: str, value: float, t: int) -> None:
        families.setdefault(family, (kind, []))[1].append(f"{sample} {value:g} {t}")

    totals: dict[str, float] = {}

    def grow(key: str, by: float) -> float:
        totals[key] = totals.get(key, 0.0) + by
        return totals[key]

    for t in range(end - 20 * 60, end + 1, STEP):
        shifted = t > end - 30
        for pod in ("chat-a-1", "chat-a-2"):
            labels = POD_LABELS.format(pod=pod)
            n = 50 * STEP
            add("forescale_requests", "counter", f'forescale_requests_total{{{labels},code="200"}}', grow(pod + "req", n), t)
            for stage, seconds in (("queue", 0.005), ("preprocess", 0.001), ("compute", 0.04), ("postprocess", 0.001),
                                   ("total", 0.05)):
                add("forescale_request_duration_seconds", "histogram",
                    f'forescale_request_duration_seconds_sum{{{labels},stage="{stage}"}}', grow(pod + stage, n * seconds), t)
                count = grow(pod + stage + "n", n)
                add("forescale_request_duration_seconds", "histogram",
                    f'forescale_request_duration_seconds_count{{{labels},stage="{stage}"}}', count, t)
                if stage == "total":
                    for le in ("0.1", "+Inf"):
                        add("forescale_request_duration_seconds", "histogram",
                            f'forescale_request_duration_seconds_bucket{{{labels},stage="total",le="{le}"}}', count, t)
            add("forescale_batch_size", "histogram", f"forescale_batch_size_sum{{{labels}}}", grow(pod + "b", n), t)
            batches = grow(pod + "bn", n / 8)
            add("forescale_batch_size", "histogram", f"forescale_batch_size_count{{{labels}}}", batches, t)
            add("forescale_batch_size", "histogram", f'forescale_batch_size_bucket{{{labels},le="+Inf"}}', batches, t)
            add("forescale_cache_hits", "counter", f"forescale_cache_hits_total{{{labels}}}", grow(pod + "h", 0.8 * n), t)
            add("forescale_cache_misses", "counter", f"forescale_cache_misses_total{{{labels}}}", grow(pod + "m", 0.2 * n), t)
            add("forescale_queue_depth", "gauge", f"forescale_queue_depth{{{labels}}}", 1, t)
            add("forescale_gpu_memory_bytes", "gauge", f"forescale_gpu_memory_bytes{{{labels}}}", 220e6, t)
            add("forescale_device_busy_seconds", "counter", f"forescale_device_busy_seconds_total{{{labels}}}",
                grow(pod + "busy", 0.6 * STEP), t)
            add("forescale_oom_warnings", "counter", f"forescale_oom_warnings_total{{{labels}}}", 0, t)
            inputs = grow(pod + "in", n)
            add("forescale_input_tokens", "histogram", f"forescale_input_tokens_sum{{{labels}}}",
                grow(pod + "tok", n * (160 if shifted else 40)), t)
            add("forescale_input_tokens", "histogram", f"forescale_input_tokens_count{{{labels}}}", inputs, t)
            add("forescale_input_tokens", "histogram", f'forescale_input_tokens_bucket{{{labels},le="+Inf"}}', inputs, t)
    lines = []
    for family, (kind, samples) in families.items():
        lines += [f"# TYPE {family} {kind}", *samples]
    return "\n".join(lines + ["# EOF"]) + "\n"


@pytest.fixture(scope="module")
def incident_prometheus(tmp_path_factory):
    """(url, end): a real Prometheus holding the incident, which ended at `end` (an hour ago, outside the head block)."""
    root = tmp_path_factory.mktemp("prometheus")
    end = (int(time.time()) - 3600) // STEP * STEP
    (root / "data.om").write_text(_incident_openmetrics(end))
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(root / "data.om"), str(root / "data")],
                   check=True, capture_output=True, timeout=120)
    # The devcluster's Prometheus on the backfilled TSDB: its data folder is `workdir/data`, and 30 days of
    # retention (720 h) keep the blocks (an hour old) from being dropped at start.
    prometheus = PrometheusProcess(scrape_interval="15s", retention="720h")
    prometheus.workdir = str(root)
    try:
        yield prometheus.start(timeout=60), end
    finally:
        prometheus.stop()  # by PID: other tests may run their own Prometheus


@pytest.fixture
def cluster_with_chat(cluster, example):
    resource = example("minimal")
    resource["metadata"]["namespace"] = "ml"
    cluster.put(resource)
    return cluster


def _forescale(cluster, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig_path), "OMP_NUM_THREADS": "1"}
    env.pop("FORESCALE_PROMETHEUS_URL", None)
    return subprocess.run([sys.executable, "-m", "forescale_cli.main", "diagnose", *args], capture_output=True, text=True,
                          env=env, timeout=120)


@needs_prometheus
def test_forescale_diagnose_finds_the_request_mix_shift_in_a_real_prometheus(cluster_with_chat, incident_prometheus):
    url, end = incident_prometheus
    ago = str(int(time.time() - end))
    result = _forescale(cluster_with_chat, "chat", "-n", "ml", "--prometheus-url", url, "--ago", ago, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    statuses = {f["cause"]: f["status"] for f in report["findings"]}
    assert report["top"] == "request-mix", report["findings"]
    assert report["findings"][0]["summary"] == "input 160 tokens (was 40)"
    assert {c for c, s in statuses.items() if s == "clear"} >= {"overload", "degraded-pods", "bad-pod", "cache-failure"}
    evidence = report["evidence"]
    assert evidence["rate_rps"] == [pytest.approx(100.0), pytest.approx(100.0)]
    assert evidence["pod_p99_ms"] == {"chat-a-1": pytest.approx(99.0), "chat-a-2": pytest.approx(99.0)}
    assert evidence["gpu_utilisation_ratio"] == [pytest.approx(0.6), pytest.approx(0.6)]
    assert evidence["oom_warnings"] == 0.0
    assert evidence["missing_why"]["revision_changed"] == "Deployment ml/chat-a not found"
    # the same run as a table
    table = _forescale(cluster_with_chat, "chat", "-n", "ml", "--prometheus-url", url, "--ago", ago)
    assert table.returncode == 0 and "Top cause: request-mix." in table.stdout


def test_forescale_diagnose_of_an_unknown_resource_is_one_line_and_exit_2(cluster_with_chat):
    result = _forescale(cluster_with_chat, "nope", "-n", "ml", "--prometheus-url", "http://127.0.0.1:1")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "forescale diagnose: InferenceDeployment ml/nope not found\n"


def test_forescale_diagnose_with_prometheus_down_prints_the_table_and_exits_0(cluster_with_chat):
    port = free_port()
    result = _forescale(cluster_with_chat, "chat", "-n", "ml", "--prometheus-url", f"http://127.0.0.1:{port}")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr and result.stderr == ""
    assert f"cannot reach Prometheus at http://127.0.0.1:{port}: connection refused" in result.stdout
    assert "No cause suspected;" in result.stdout
    rows = [line.split()[1:3] for line in result.stdout.splitlines() if line[:2].strip().isdigit()]
    assert len(rows) == 7 and {status for _, status in rows} <= {"unknown", "clear"}
    assert {cause for cause, status in rows if status == "unknown"} >= {"overload", "degraded-pods", "bad-pod",
                                                                          "cache-failure", "request-mix"}


def test_forescale_diagnose_without_kubernetes_credentials_is_one_line_and_exit_1(tmp_path):
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "none"), "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "forescale_cli.main", "diagnose", "chat", "-n", "ml"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("forescale diagnose: cannot load Kubernetes credentials:") and result.stderr.count("\n") == 1
