"""`forescale replay --b-variant NAME`: pool B's model at its measured speed and agreement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forescale_cli.main import main
from forescale_profiles.precision import INT8_OVER_FP16
from forescale_profiles.variant_speed import pool_b_variant


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["replay", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("variant", ["int8", "distilled-int8"])
def test_pool_b_runs_at_its_variants_measured_speed(azure_slice: Path, capsys, variant: str) -> None:
    code, out, err = run(capsys, "--trace", str(azure_slice), "--format", "azure", "--policies", "forescale",
                         "--incidents", "none", "--json", "--forecaster", "ewm", "--b-variant", variant)
    assert code == 0, err
    data = json.loads(out)
    measured = pool_b_variant(variant)
    pool_b = data["calibration"]["pool_b"]
    assert pool_b["variant"] == variant and pool_b["label"] == "measured on CPU, carried to the GPU profile"
    assert pool_b["service_time_vs_a_fp16"] == pytest.approx(measured.service_factor, abs=1e-4)
    assert pool_b["agreement"] == measured.agreement
    # B's prior is its own load test: a lighter model's pods serve more at the SLO
    capacity_b = data["policies"]["forescale"]["capacity_rps"]["b"]
    int8_capacity = data["calibration"]["capacity_rps_at_slo"]["int8"]
    if variant == "int8":
        # the prior, moved by a few of B's own samples (each step at most 10%): not the distilled student's 1.2x
        assert capacity_b == pytest.approx(int8_capacity, rel=0.15)
    else:
        assert capacity_b > 1.2 * int8_capacity


def test_the_variants_service_time_is_the_profiles_int8_times_the_students_compute() -> None:
    teacher, student = pool_b_variant("int8"), pool_b_variant("distilled-int8")
    assert teacher.service_factor == INT8_OVER_FP16 and teacher.model_factor == 1.0
    assert student.service_factor == pytest.approx(INT8_OVER_FP16 * student.model_factor)
    assert 0 < student.model_factor < 1


@pytest.mark.parametrize("value, words", [
    ("distilled", "--b-variant must be one of int8, distilled-int8, got 'distilled'"),
    ("", "--b-variant must be one of"),
    ("fp16", "--b-variant must be one of"),
])
def test_an_unknown_variant_is_one_line_naming_the_flag(azure_slice: Path, capsys, value: str, words: str) -> None:
    code, out, err = run(capsys, "--trace", str(azure_slice), "--format", "azure", "--policies", "hpa",
                         "--incidents", "none", "--b-variant", value)
    assert code == 2 and out == ""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0], err
