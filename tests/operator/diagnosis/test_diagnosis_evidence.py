"""Evidence (`diagnosis/evidence.py`): every field is classified, and the JSON round trip
(for the snapshot ConfigMap) is exact for good values and lenient for bad ones."""

from __future__ import annotations

import json
import math
from dataclasses import fields, replace

import pytest

from diagnosis_cases import CAUSE_EVIDENCE, CONTROL
from forescale_operator.diagnosis.evidence import _BOOKKEEPING, FLAG_FIELDS, PAIR_FIELDS, POD_FIELDS, VALUE_FIELDS, Evidence

KINDS = PAIR_FIELDS + VALUE_FIELDS + FLAG_FIELDS + POD_FIELDS


def test_every_field_has_exactly_one_kind():
    names = [f.name for f in fields(Evidence) if f.name not in _BOOKKEEPING]
    assert sorted(names) == sorted(KINDS) and len(set(KINDS)) == len(KINDS)


def test_every_field_is_optional():
    empty = Evidence()
    assert set(empty.missing()) == set(KINDS)
    assert CONTROL.missing() == ()


@pytest.mark.parametrize("name", ["control", "control-10s", *CAUSE_EVIDENCE])
def test_json_round_trip_is_exact(name):
    evidence = {"control": CONTROL, "control-10s": replace(CONTROL, now_seconds=10.0)}.get(name) or CAUSE_EVIDENCE[name]
    text = json.dumps(evidence.to_json(), allow_nan=False)  # strict JSON: no NaN sneaks in
    back = Evidence.from_json(json.loads(text))
    assert back.to_json() == evidence.to_json()
    for field in PAIR_FIELDS:
        assert getattr(back, field) == tuple(getattr(evidence, field))


def test_non_finite_values_become_null_in_json():
    evidence = replace(CONTROL, rate_rps=(math.nan, 100.0), revision_age_seconds=math.inf,
                       pod_p99_ms={"a": math.nan, "b": 120.0})
    data = evidence.to_json()
    json.dumps(data, allow_nan=False)
    assert data["rate_rps"] == [None, 100.0]
    assert data["revision_age_seconds"] is None
    assert data["pod_p99_ms"] == {"a": None, "b": 120.0}


def test_missing_reasons_survive_the_round_trip():
    evidence = Evidence(missing_why={"rate_rps.before": "timed out after 5 s"})
    assert Evidence.from_json(evidence.to_json()).missing_why == {"rate_rps.before": "timed out after 5 s"}


@pytest.mark.parametrize("raw,field", [
    ({"rate_rps": "fast"}, "rate_rps"),
    ({"rate_rps": [1, 2, 3]}, "rate_rps"),
    ({"restarted_containers": "two"}, "restarted_containers"),
    ({"revision_changed": "yes"}, "revision_changed"),
    ({"pod_p99_ms": [120, 130]}, "pod_p99_ms"),
], ids=lambda v: str(v)[:30])
def test_bad_json_values_become_missing_with_a_reason(raw, field):
    evidence = Evidence.from_json(raw)
    assert getattr(evidence, field) is None
    assert evidence.missing_why[field].startswith("unreadable")


@pytest.mark.parametrize("raw", [None, [], "scene", 7])
def test_json_that_is_not_an_object_reads_as_no_evidence(raw):
    evidence = Evidence.from_json(raw)
    assert set(evidence.missing()) == set(KINDS) and "evidence" in evidence.missing_why


def test_unknown_keys_are_ignored():
    assert Evidence.from_json({"rate_rps": [1.0, 2.0], "future_field": 3}).rate_rps == (1.0, 2.0)
