"""The incident snapshot ConfigMap."""

from __future__ import annotations

import json

import numpy as np
import pytest

from forescale_operator.snapshot import (
    MAX_BYTES, MAX_DIAGNOSIS_BYTES, MAX_PROFILE_BYTES, slowest_pod, snapshot_configmap, snapshot_name, with_diagnosis,
)
from forescale_predictor.forecast_types import LATENCY_MS, RATE, Forecast, History


def _history(n):
    t = np.arange(n, dtype=float) * 5 + 1_700_000_000
    lat = np.linspace(50, 400, n)
    lat[3 % max(n, 1):4] = np.nan
    return History(5, t, {LATENCY_MS: lat, RATE: np.full(n, 20.0)})


def _forecast():
    return Forecast(1_700_000_100, 15, 45, (0.5, 0.9), {0.5: np.array([300.0, 310, 320]), 0.9: np.array([350.0, 360, 380])},
                    {0.5: np.array([20.0, 21, 22]), 0.9: np.array([25.0, 26, 27])}, "lstm")


@pytest.mark.parametrize("n", [0, 10, 500])
def test_snapshot_is_owned_labelled_and_valid_json(n):
    cm = snapshot_configmap(namespace="ml", name="chat", uid="u-1", at=1_764_670_500, history=_history(n),
                            decisions=[{"summary": "Shift 30% to chat-b"}], forecast=_forecast(),
                            spec={"slo": {"targetLatencyMs": 200}}, observations={"latency_ms": 412.0})
    assert cm["metadata"]["name"] == "chat-incident-20251202-101500"
    assert cm["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert cm["metadata"]["labels"]["forescale.io/deployment"] == "chat"
    scene = json.loads(cm["data"]["scene.json"])
    assert len(scene["window"]["times"]) == n
    assert scene["forecast"]["latencyMs"]["0.9"] == [350.0, 360.0, 380.0]
    assert scene["decisions"][0]["summary"] == "Shift 30% to chat-b"
    if n > 3:
        assert scene["window"]["latencyMs"][3] is None  # NaN is written as null, JSON stays valid


def test_huge_window_is_trimmed_from_the_oldest_end():
    n = 60_000
    cm = snapshot_configmap(namespace="ml", name="chat", uid="u", at=0, history=_history(n), decisions=[{"i": i} for i in range(100)],
                            forecast=None, spec={}, observations={})
    text = cm["data"]["scene.json"]
    assert len(text.encode()) <= MAX_BYTES
    scene = json.loads(text)
    assert scene["window"]["times"][-1] == _history(n).times[-1]  # the newest rows are kept
    assert 0 < len(scene["window"]["times"]) < n


def test_name_is_sortable_by_time():
    assert snapshot_name("chat", 0) < snapshot_name("chat", 3600)


def _scene_configmap():
    return snapshot_configmap(namespace="ml", name="chat", uid="u", at=1_764_670_500, history=_history(10), decisions=[],
                              forecast=None, spec={}, observations={})


EVIDENCE = {"rate_rps": [210.0, 100.0], "pod_p99_ms": {"chat-a-1": 120.0, "chat-a-2": 610.0, "chat-a-3": 118.0},
            "oom_warnings": 0.0, "missing_why": {"kv_hit_ratio": "no prefix cache"}}
DIAGNOSIS = {"top": "bad-pod", "message": "One bad pod suspected (bad-pod): pod chat-a-2 p99 610 ms",
             "findings": [{"cause": "bad-pod", "status": "suspected", "score": 1.0, "summary": "pod chat-a-2", "missing": []}]}
PROFILE = {"requests": 50, "complete": True, "emulated": True, "stages": {"total": {"mean_ms": 600.0}}, "table": "stage ..."}


def test_the_diagnosis_goes_in_beside_the_scene_and_the_scene_is_untouched():
    cm = _scene_configmap()
    out = with_diagnosis(cm, evidence=EVIDENCE, diagnosis=DIAGNOSIS, profile=PROFILE, profiled_pod="chat-a-2")
    assert set(out["data"]) == {"scene.json", "evidence.json", "diagnosis.json", "profile.json"}
    assert out["data"]["scene.json"] == cm["data"]["scene.json"] and set(cm["data"]) == {"scene.json"}, "a copy"
    assert json.loads(out["data"]["evidence.json"]) == EVIDENCE
    assert json.loads(out["data"]["diagnosis.json"]) == DIAGNOSIS
    assert json.loads(out["data"]["profile.json"]) == {"pod": "chat-a-2", "profile": PROFILE}
    assert out["metadata"] == cm["metadata"]


def test_without_a_profile_there_is_no_profile_entry():
    out = with_diagnosis(_scene_configmap(), evidence=EVIDENCE, diagnosis=DIAGNOSIS)
    assert "profile.json" not in out["data"]


# (evidence given, what evidence.json reads back)
ODD_EVIDENCE = [
    (None, None),
    ({"rate_rps": (float("nan"), 100.0)}, {"rate_rps": [None, 100.0]}),
    ({"revision_age_seconds": float("inf")}, {"revision_age_seconds": None}),
    ({"when": object}, {"when": str(object)}),
]


@pytest.mark.parametrize("evidence,back", ODD_EVIDENCE, ids=["none", "nan", "inf", "not-json"])
def test_odd_values_never_raise_and_the_json_stays_strict(evidence, back):
    out = with_diagnosis(_scene_configmap(), evidence=evidence, diagnosis=None)
    assert json.loads(out["data"]["evidence.json"]) == back
    assert json.loads(out["data"]["diagnosis.json"]) is None


def test_parts_over_their_budget_are_cut_and_the_configmap_stays_under_1_mib():
    many_pods = {"pod_p99_ms": {f"chat-a-{i:06d}": 100.0 for i in range(5000)}}
    table = "a line of the profiler table\n" * 40_000  # ~1.2 MB
    out = with_diagnosis(_huge_scene(), evidence=many_pods, diagnosis=DIAGNOSIS, profile={**PROFILE, "table": table},
                         profiled_pod="chat-a-000001")
    assert "omitted" in json.loads(out["data"]["evidence.json"])
    profile = json.loads(out["data"]["profile.json"])
    assert len(out["data"]["profile.json"].encode()) <= MAX_PROFILE_BYTES
    assert profile["profile"]["table"].endswith("[cut to fit the snapshot]") and profile["profile"]["requests"] == 50
    assert sum(len(v.encode()) for v in out["data"].values()) < 1024 * 1024 - 16 * 1024  # room for metadata
    assert len(out["data"]["diagnosis.json"].encode()) <= MAX_DIAGNOSIS_BYTES


def _huge_scene():
    return snapshot_configmap(namespace="ml", name="chat", uid="u", at=0, history=_history(60_000), decisions=[],
                              forecast=None, spec={}, observations={})


@pytest.mark.parametrize("evidence,pod", [
    (EVIDENCE, "chat-a-2"),
    ({"pod_p99_ms": {"a": float("nan"), "b": 5.0}}, "b"),
    ({"pod_p99_ms": {"b": 5.0, "a": 5.0}}, "a"),  # a tie goes to the first name, so the choice is stable
    ({"pod_p99_ms": {}}, None), ({"pod_p99_ms": None}, None), ({}, None), (None, None), ("junk", None),
    ({"pod_p99_ms": {"a": True, "b": "slow"}}, None),
], ids=["slowest", "nan-skipped", "tie", "empty", "null", "absent", "none", "not-a-dict", "not-numbers"])
def test_slowest_pod_is_the_one_to_profile(evidence, pod):
    assert slowest_pod(evidence) == pod


def test_the_checklists_own_json_reads_back_from_the_snapshot():
    from dataclasses import replace

    from forescale_operator.diagnosis import Evidence, diagnose

    evidence = Evidence(rate_rps=(104.0, 100.0), queue_depth=(2.0, 2.0), input_tokens_mean=(300.0, 120.0),
                        pod_p99_ms={"chat-a-1": 120.0, "chat-a-2": 640.0}, missing_why={"kv_hit_ratio": "no prefix cache"})
    evidence = replace(evidence, gpu_memory_bytes=(float("nan"), 1e10))
    diagnosis = diagnose(evidence)
    out = with_diagnosis(_scene_configmap(), evidence=evidence.to_json(), diagnosis=diagnosis.to_json(),
                         profiled_pod=slowest_pod(evidence.to_json()), profile=PROFILE)
    back = Evidence.from_json(json.loads(out["data"]["evidence.json"]))
    assert back.to_json() == evidence.to_json()
    assert diagnose(back).to_json() == json.loads(out["data"]["diagnosis.json"]) == diagnosis.to_json()
    assert json.loads(out["data"]["profile.json"])["pod"] == "chat-a-2"
