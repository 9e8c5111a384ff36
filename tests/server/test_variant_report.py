"""`variants report`: refusals, quality warnings, and one real run on a tiny teacher."""

from __future__ import annotations

import json

import pytest

from forescale_server.variant_build import build_variants
from forescale_server.variant_manifest import MANIFEST
from forescale_server.variant_report import (
    QUALITY_TOLERANCE,
    ReportError,
    discover,
    measure_report,
    quality_warnings,
    render_table,
    stage_means,
)
from forescale_profiles.variant_speed import speed_ratio
from forescale_server.variant_speed import speed_record

from .variant_fixtures import tiny_context, tiny_teacher

MEASURED = {"mean_cosine": 0.95, "spearman": 0.97}


@pytest.mark.parametrize("built, expected", [
    ({"mean_cosine": 0.95, "spearman": 0.97}, []),
    ({"mean_cosine": 0.95 + QUALITY_TOLERANCE / 2, "spearman": 0.97}, []),
    ({"mean_cosine": 0.99, "spearman": 0.97}, ["mean_cosine 0.9900, re-measured 0.9500"]),
    ({"mean_cosine": 0.95, "spearman": 0.90}, ["spearman 0.9000, re-measured 0.9700"]),
    ({"spearman": 0.97}, ["has no mean_cosine"]),
])
def test_quality_warnings(built, expected):
    lines = quality_warnings("pruned", built, MEASURED)
    assert len(lines) == len(expected)
    for line, text in zip(lines, expected):
        assert line.startswith("pruned: ") and text in line


def test_report_refuses_a_missing_or_empty_directory(tmp_path):
    with pytest.raises(ReportError, match="no such directory"):
        discover(tmp_path / "none", "minilm")
    with pytest.raises(ReportError, match="no variant directories"):
        discover(tmp_path, "minilm")


@pytest.fixture(scope="module")
def tiny_variants(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    teacher = tiny_teacher(root / "teacher")
    ctx = tiny_context(teacher)
    ctx.teacher_name = str(teacher)
    build_variants(root / "out", ["distilled", "fused"], ctx)
    return root / "out", str(teacher)


def test_report_refuses_a_damaged_variant_naming_the_file(tiny_variants, tmp_path):
    import shutil

    out, teacher = tiny_variants
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / "fused" / "model.onnx").write_bytes(b"half")
    with pytest.raises(ReportError, match="does not match the SHA-256") as err:
        discover(copy, teacher)
    assert str(copy / "fused" / "model.onnx") in str(err.value)


@pytest.mark.parametrize("stage_time, latencies, expected", [
    # two rounds of 4 requests: 0.8 s and 1.2 s of compute -> 250 ms each, not the last round's 300
    ({"compute": [2.0, 8.0], "total": [2.2, 8.0]}, [0.3] * 8, {"compute": 250.0, "total": 275.0, "http_and_json": 25.0}),
    ({"compute": [0.5, 1.0]}, [0.6], {"compute": 500.0}),  # no server total: no remainder to attribute
    ({}, [], {}),
])
def test_stages_are_means_over_all_rounds(stage_time, latencies, expected):
    got = stage_means(stage_time, latencies)
    assert got.keys() == expected.keys()
    assert all(got[k] == pytest.approx(v) for k, v in expected.items())


def test_report_serves_every_variant_and_prints_the_design_keys(tiny_variants, tmp_path):
    out, teacher = tiny_variants
    manifest = json.loads((out / "distilled" / MANIFEST).read_text())
    result = measure_report(out, teacher=teacher, rounds=1, n_b1=2, n_b32=1, say=lambda _: None)
    keys = {"name", "recipe", "size_bytes", "p50_ms_b1", "p99_ms_b1", "p50_ms_b32", "p99_ms_b32", "throughput_rps",
            "speedup_vs_fp32_b32", "mean_cosine", "spearman", "eval_sentences"}
    assert result["teacher"] == teacher
    assert [r["name"] for r in result["variants"]] == ["distilled", "fused"]
    for row in [result["baseline"], *result["variants"]]:
        assert keys <= set(row)
        assert row["size_bytes"] > 0 and row["throughput_rps"] > 0 and row["p99_ms_b32"] >= row["p50_ms_b32"] > 0
        assert {"compute", "total", "http_and_json"} <= set(row["stages_ms_b32"])
    assert result["baseline"]["mean_cosine"] == pytest.approx(1.0)
    fused = result["variants"][1]
    assert fused["mean_cosine"] > 0.9999 and fused["anchor"]
    distilled = result["variants"][0]
    assert distilled["mean_cosine"] == pytest.approx(manifest["quality"]["mean_cosine"], abs=QUALITY_TOLERANCE)
    assert result["warnings"] == []
    table = render_table(result)
    assert "distilled" in table and "fused" in table and "http_and_json" in table
    # the speed record the replay reads is made from the same result
    record = speed_record(result)
    path = tmp_path / "speed.json"
    path.write_text(json.dumps(record))
    assert speed_ratio("distilled", path=path) == distilled["speedup_vs_fp32_b32"]
    assert speed_ratio("distilled", "mean_cosine", path=path) == distilled["mean_cosine"]
    with pytest.raises(ValueError, match="no variant 'pruned'"):
        speed_ratio("pruned", path=path)
