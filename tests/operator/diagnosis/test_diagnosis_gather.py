"""Gathering evidence (`diagnosis/gather.py`) through a fake PromQuery: every answer, every kind of
failure (no series, NaN, an exception, a hang), and the Kubernetes facts. The query texts are
checked against the model server's real exposition and evaluated by promtool."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import time

import pytest
import yaml

from forescale_operator.diagnosis import KubeFacts, Windows, diagnose, gather_evidence
from forescale_operator.diagnosis.evidence import PAIR_FIELDS
from forescale_operator.diagnosis.gather import NOT_EXPORTED, PAIR_QUERIES, POD_QUERIES, VALUE_QUERIES, queries
from forescale_operator.diagnosis.rules import UNKNOWN

HANG = object()

#: what a healthy pool answers, by query key
HEALTHY = {
    "rate_rps": 200.0, "rate_per_pod_rps": 100.0, "error_ratio": 0.0, "queue_depth": 5.0, "batch_size_mean": 8.0,
    "queue_wait_ms": 5.0, "preprocess_ms": 1.0, "compute_ms": 40.0, "postprocess_ms": 1.0, "compute_per_item_ms": 5.0,
    "result_cache_hit_ratio": 0.8, "kv_used_ratio": 0.9, "gpu_memory_bytes": 1e10,
    "kv_fragmentation_ratio": 0.05, "gpu_utilisation_ratio": 0.6, "input_tokens_mean": 40.0, "output_tokens_mean": 20.0,
}
#: what a healthy pool answers to the "now"-only queries
HEALTHY_NOW = {"oom_warnings.now": 0.0}
PODS = {"chat-a-1": 120.0, "chat-a-2": 130.0}


class FakeProm:
    """Answers by query key (`rate_rps.now`): a number, None (no series), an exception, or HANG."""

    def __init__(self, answers: dict[str, object], pods: object = PODS, namespace="ml", deployment="chat",
                 pool="a", windows=Windows()) -> None:
        self._by_text = {text: key for key, text in queries(namespace, deployment, pool, windows).items()}
        self.answers, self.pods = answers, pods
        self.asked: list[str] = []

    async def _answer(self, value):
        if value is HANG:
            await asyncio.sleep(3600)
        if isinstance(value, Exception):
            raise value
        return value

    async def scalar(self, query: str):
        key = self._by_text[query]
        self.asked.append(key)
        return await self._answer(self.answers.get(key))

    async def vector(self, query: str):
        self.asked.append(self._by_text[query])
        return await self._answer(self.pods)


def _both(values: dict[str, object]) -> dict[str, object]:
    return {f"{k}.{side}": v for k, v in values.items() for side in ("now", "before")}


async def test_a_healthy_pool_gives_complete_prometheus_evidence():
    prom = FakeProm(_both(HEALTHY) | HEALTHY_NOW)
    evidence = await gather_evidence(prom, "ml", "chat", facts=_facts(KubeFacts(0, 0, False, 86400.0, model_health=1.0)))
    for name, value in HEALTHY.items():
        assert getattr(evidence, name) == (value, value), name
    assert evidence.compute_per_item_ms == (5.0, 5.0)
    assert evidence.pod_p99_ms == PODS and evidence.pod_compute_per_item_ms == PODS  # the fake answers every vector alike
    assert evidence.model_health == 1.0
    assert (evidence.oom_killed_containers, evidence.restarted_containers, evidence.revision_changed) == (0, 0, False)
    assert evidence.oom_warnings == 0.0
    assert set(evidence.missing()) == set(NOT_EXPORTED) == {"kv_hit_ratio"}
    assert {k: v for k, v in evidence.missing_why.items()} == NOT_EXPORTED
    assert len(prom.asked) == 2 * len(PAIR_QUERIES) + len(VALUE_QUERIES) + len(POD_QUERIES)


async def test_the_healthy_pool_suspects_nothing_and_every_rule_decides():
    evidence = await gather_evidence(FakeProm(_both(HEALTHY) | HEALTHY_NOW), "ml", "chat",
                                     facts=_facts(KubeFacts(0, 0, False, 1e5)))
    diagnosis = diagnose(evidence)
    assert diagnosis.top is None
    assert {f.status for f in diagnosis.findings} == {"clear"}


@pytest.mark.parametrize("answer,value,why", [
    (3.0, 3.0, None), (None, None, "no series"), (float("nan"), None, "not a usable number: nan"),
    (RuntimeError("boom"), None, "failed: RuntimeError: boom"),
], ids=["three", "no-series", "nan", "raises"])
async def test_oom_warnings_are_read_over_the_now_window_only(answer, value, why):
    prom = FakeProm(_both(HEALTHY) | {"oom_warnings.now": answer})
    evidence = await gather_evidence(prom, "ml", "chat")
    assert evidence.oom_warnings == value
    assert evidence.missing_why.get("oom_warnings") == why
    assert "oom_warnings.before" not in prom.asked and "oom_warnings.now" in prom.asked


# (answer to rate_rps.now, the reason recorded)
FAILURES = [
    (None, "no series"),
    (float("nan"), "not a usable number: nan"),
    (-3.0, "not a usable number: -3.0"),
    (RuntimeError("502 Bad Gateway"), "failed: RuntimeError: 502 Bad Gateway"),
    (asyncio.TimeoutError(), "timed out after 0.05 s"),
    (HANG, "timed out after 0.05 s"),
]


@pytest.mark.parametrize("answer,why", FAILURES, ids=[w for _, w in FAILURES])
async def test_a_failed_query_leaves_its_side_missing_with_the_reason(answer, why):
    prom = FakeProm(_both(HEALTHY) | {"rate_rps.now": answer})
    evidence = await gather_evidence(prom, "ml", "chat", timeout_s=0.05)
    assert evidence.rate_rps == (None, 200.0)
    assert evidence.missing_why["rate_rps.now"] == why
    assert evidence.queue_depth == (5.0, 5.0)


async def test_both_sides_missing_leave_the_field_missing():
    prom = FakeProm(_both(HEALTHY) | {"kv_used_ratio.now": None, "kv_used_ratio.before": None})
    evidence = await gather_evidence(prom, "ml", "chat")
    assert evidence.kv_used_ratio is None and evidence.missing_why["kv_used_ratio"] == "no series"


async def test_compute_per_item_is_device_time_per_item_computed_so_cache_hits_do_not_dilute_it():
    text = queries("ml", "chat", "a")["compute_per_item_ms.now"]
    assert "forescale_device_busy_seconds_total" in text and "forescale_batch_size_sum" in text
    assert "stage=" not in text  # not the per-request compute stage, where a cache hit counts 0
    prom = FakeProm(_both(HEALTHY) | {"compute_per_item_ms.before": None})
    evidence = await gather_evidence(prom, "ml", "chat")
    assert evidence.compute_per_item_ms == (5.0, None)
    assert evidence.missing_why["compute_per_item_ms.before"] == "no series"


async def test_prometheus_down_gives_no_evidence_and_an_unknown_diagnosis_in_bounded_time():
    prom = FakeProm({}, pods=HANG)
    prom.answers = _both({k: HANG for k in HEALTHY})
    started = time.monotonic()
    evidence = await gather_evidence(prom, "ml", "chat", timeout_s=0.1)
    assert time.monotonic() - started < 2.0, "queries run at once, each bounded"
    assert all(getattr(evidence, name) is None for name in PAIR_FIELDS)
    assert evidence.pod_p99_ms is None and evidence.missing_why["pod_p99_ms"] == "timed out after 0.1 s"
    diagnosis = diagnose(evidence)
    assert diagnosis.top is None and {f.status for f in diagnosis.findings} == {UNKNOWN}


@pytest.mark.parametrize("pods,expected", [
    ({}, None), ({"chat-a-1": float("nan"), "chat-a-2": 130.0}, {"chat-a-2": 130.0}), ("oops", None),
], ids=["none", "nan-dropped", "not-a-dict"])
async def test_pod_latencies_keep_only_usable_values(pods, expected):
    evidence = await gather_evidence(FakeProm(_both(HEALTHY), pods=pods), "ml", "chat")
    assert evidence.pod_p99_ms == expected


def _facts(value):
    async def read():
        if value is HANG:
            await asyncio.sleep(3600)
        if isinstance(value, Exception):
            raise value
        return value
    return read


@pytest.mark.parametrize("facts,why", [
    (None, "not read (no Kubernetes facts given)"),
    (_facts(ConnectionError("apiserver unreachable")), "failed: ConnectionError: apiserver unreachable"),
    (_facts(HANG), "timed out after 0.05 s"),
    (_facts({"restarts": 1}), "facts were not KubeFacts: dict"),
], ids=["absent", "raises", "hangs", "wrong-type"])
async def test_kubernetes_facts_that_fail_are_missing_with_the_reason(facts, why):
    evidence = await gather_evidence(FakeProm(_both(HEALTHY)), "ml", "chat", facts=facts, timeout_s=0.05)
    for name in ("oom_killed_containers", "restarted_containers", "revision_changed", "revision_age_seconds"):
        assert getattr(evidence, name) is None
        assert evidence.missing_why[name] == why


async def test_partial_facts_name_what_the_api_did_not_say():
    evidence = await gather_evidence(FakeProm(_both(HEALTHY)), "ml", "chat",
                                     facts=_facts(KubeFacts(oom_killed_containers=1, revision_changed=True)))
    assert evidence.oom_killed_containers == 1 and evidence.revision_changed is True
    assert evidence.missing_why["revision_age_seconds"] == "the Kubernetes API did not say"


async def test_the_facts_reader_says_why_a_fact_is_missing():
    facts = KubeFacts(oom_killed_containers=0, restarted_containers=0,
                      missing_why={"revision_changed": "Deployment ml/chat-a not found", "restarted_containers": "ignored"})
    evidence = await gather_evidence(FakeProm(_both(HEALTHY)), "ml", "chat", facts=_facts(facts))
    assert evidence.missing_why["revision_changed"] == "Deployment ml/chat-a not found"
    assert evidence.missing_why["revision_age_seconds"] == "the Kubernetes API did not say"
    assert "restarted_containers" not in evidence.missing_why, "a fact that is present is not missing"


def test_windows_reach_back_with_offsets():
    now = queries("ml", "chat", "a", Windows())
    assert "[30s])" in now["rate_rps.now"] and "offset" not in now["rate_rps.now"]
    assert "[600s] offset 30s)" in now["rate_rps.before"]
    later = queries("ml", "chat", "a", Windows(now_seconds=30, before_seconds=300, ago_seconds=120))
    assert "[30s] offset 120s)" in later["rate_rps.now"]
    assert "[300s] offset 150s)" in later["rate_rps.before"]


def test_label_values_are_escaped_and_the_pool_selected():
    text = queries("ml", 'chat"} or vector(1) #', "a")["rate_rps.now"]
    assert 'deployment="chat\\"} or vector(1) #"' in text and 'pool="a"' in text
    assert 'pool=' not in queries("ml", "chat", None)["rate_rps.now"]


def _server_exposition() -> set[str]:
    """The sample names the real model server exports, with every optional gauge present."""
    server_metrics = pytest.importorskip("forescale_server.metrics")
    from forescale_server.config import Labels

    state = {"precision": "fp16", "queue_depth": 3, "kv_used": 10, "kv_free": 90, "kv_fragmentation": 0.1,
             "gpu_memory_bytes": 1e9}
    metrics = server_metrics.ServerMetrics(Labels(deployment="chat", pool="a"), state=lambda: state)
    for stage in ("queue", "preprocess", "compute", "postprocess", "total"):
        metrics.observe_stage("fp16", stage, 0.01)
    metrics.observe_request("fp16", 200)
    metrics.observe_batch("fp16", 8)
    metrics.observe_cache("fp16", 3, 1)
    metrics.observe_tokens("fp16", [12, 30], [5, 7])
    metrics.observe_busy("fp16", 0.02)
    text = metrics.exposition().decode()
    return {m.group(1) for m in re.finditer(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]", text, re.MULTILINE)}


def test_every_series_queried_is_one_the_model_server_exports():
    exported = _server_exposition()
    used = {name for text in queries("ml", "chat", "a").values() for name in re.findall(r"\b(forescale_[a-z_]+)\{", text)}
    assert used, "the queries name forescale_* series"
    assert used <= exported, f"not exported: {sorted(used - exported)}"
    stages = {s for text in queries("ml", "chat").values() for s in re.findall(r'stage="(\w+)"', text)}
    assert stages == {"queue", "preprocess", "compute", "postprocess", "total"}


# -- the queries evaluated by promtool on series shaped like the server's, scraped every 15 s -------

_POD = 'namespace="ml",deployment="chat",pool="{pool}",precision="fp16",pod="{pod}"'


def _series() -> list[dict]:
    out = []

    def add(name: str, labels: str, values: str) -> None:
        out.append({"series": f"{name}{{{labels}}}", "values": values})

    for pool, pod, used, free, mem, depth, slow in (("a", "chat-a-1", 600, 400, 1e10, 2, False),
                                                     ("a", "chat-a-2", 900, 100, 1.2e10, 3, True),
                                                     ("b", "chat-b-1", 1000, 0, 9e10, 50, True)):
        labels = _POD.format(pool=pool, pod=pod)
        add("forescale_requests_total", labels + ',code="200"', "0+1500x80")  # 100 rps
        for stage, seconds_per_scrape in (("queue", 7.5), ("preprocess", 1.5), ("compute", 60), ("postprocess", 1.5)):
            add("forescale_request_duration_seconds_sum", labels + f',stage="{stage}"', f"0+{seconds_per_scrape}x80")
            add("forescale_request_duration_seconds_count", labels + f',stage="{stage}"', "0+1500x80")
        for le, count in (("0.1", 0 if slow else 1500), ("0.5", 1500), ("+Inf", 1500)):
            add("forescale_request_duration_seconds_bucket", labels + f',stage="total",le="{le}"', f"0+{count}x80")
        add("forescale_batch_size_sum", labels, "0+1200x80")
        add("forescale_batch_size_count", labels, "0+150x80")
        add("forescale_cache_hits_total", labels, "0+1200x80")
        add("forescale_cache_misses_total", labels, "0+300x80")
        add("forescale_kv_blocks_used", labels, f"{used}x80")
        add("forescale_kv_blocks_free", labels, f"{free}x80")
        add("forescale_gpu_memory_bytes", labels, f"{int(mem)}x80")
        add("forescale_queue_depth", labels, f"{depth}x80")
        add("forescale_kv_fragmentation_ratio", labels, f"{used / 10000}x80")  # 0.06 and 0.09 in pool a
        add("forescale_device_busy_seconds_total", labels, f"0+{15 * used / 1000}x80")  # busy 0.6 and 0.9 of the time
        add("forescale_input_tokens_sum", labels, "0+60000x80")  # 40 tokens per input
        add("forescale_input_tokens_count", labels, "0+1500x80")
        add("forescale_output_tokens_sum", labels, "0+30000x80")  # 20 per completion
        add("forescale_output_tokens_count", labels, "0+1500x80")
        # pod 2 warned 3 times in the last minute (at 17:15, 17:30 and 17:45), pod 1 never
        add("forescale_oom_warnings_total", labels, "0x68 1 2 3 3x8" if slow else "0x80")
    return out


#: what pool a of that scene reads, per field
SCENE = {"rate_rps": 200.0, "rate_per_pod_rps": 100.0, "error_ratio": 0.0, "queue_depth": 5.0, "batch_size_mean": 8.0, "queue_wait_ms": 5.0,
         "preprocess_ms": 1.0, "compute_ms": 40.0, "postprocess_ms": 1.0, "result_cache_hit_ratio": 0.8,
         # device-busy seconds over items batched: (0.6 + 0.9) s/s over 2 x 1200 items per 15 s
         "compute_per_item_ms": 9.375,
         "kv_used_ratio": 0.9, "gpu_memory_bytes": 1.2e10, "kv_fragmentation_ratio": 0.09,
         "gpu_utilisation_ratio": 0.75, "input_tokens_mean": 40.0, "output_tokens_mean": 20.0}
#: what the "now"-only queries read at 18m, as a range: increase() extrapolates the warnings it sees in the
#: window (two between the samples in it, three counting the one just before) to the window's edges
SCENE_NOW = {"oom_warnings": (1.5, 4.5)}


def test_promtool_evaluates_every_query_on_server_shaped_series(tmp_path):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (run `make system-deps`: Debian's prometheus package)")
    texts = queries("ml", "chat", "a", Windows(now_seconds=60))  # a minute: four of the scene's 15 s scrapes
    checks = []
    for key, text in texts.items():
        name = key.split(".")[0]
        if name == "pod_p99_ms":
            expr = f"count(({text}) > 0)"
            value = 2
        elif name == "pod_compute_per_item_ms":  # 0.6 and 0.9 busy-seconds/s over 80 items/s each: 7.5 and 11.25 ms
            expr = f"sum({text})"
            value = 18.75
        elif name in SCENE_NOW:
            low, high = SCENE_NOW[name]
            expr = f"(({text}) > bool {low!r}) * (({text}) < bool {high!r})"
            value = 1
        else:
            expected = SCENE[name]
            expr = f"abs(({text}) - {expected!r}) <= bool {max(1e-6, 1e-6 * expected)!r}"
            value = 1
        checks.append({"expr": expr, "eval_time": "18m", "exp_samples": [{"labels": "{}", "value": value}]})
    spec = {"rule_files": [], "evaluation_interval": "15s",
            "tests": [{"interval": "15s", "input_series": _series(), "promql_expr_test": checks}]}
    (tmp_path / "diagnosis_test.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, width=10_000))
    result = subprocess.run([promtool, "test", "rules", "diagnosis_test.yaml"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
