"""forescale_profiles.variant_speed: the measured variants, read for pool B; bad files named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forescale_profiles.variant_speed import measured, pool_b_variant, speed_ratio

ROWS = {
    "int8": {"compute_speedup_vs_fp32_b32": 1.4, "mean_cosine": 0.993, "spearman": 0.991},
    "distilled": {"compute_speedup_vs_fp32_b32": 2.0, "mean_cosine": 0.9, "spearman": 0.85},
    "distilled-int8": {"compute_speedup_vs_fp32_b32": 3.1, "mean_cosine": 0.89, "spearman": 0.84},
}


def _write(tmp_path: Path, content) -> Path:
    path = tmp_path / "speed.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    measured.cache_clear()
    return path


@pytest.mark.parametrize("name, service_factor, agreement", [
    ("int8", 0.6, 0.993),              # A's model at int8: the profiles' own int8 factor
    ("distilled-int8", 0.3, 0.89),     # the student's compute (1/2 of the teacher's) at int8
])
def test_pool_b_variants(tmp_path: Path, name: str, service_factor: float, agreement: float) -> None:
    variant = pool_b_variant(name, _write(tmp_path, {"variants": ROWS}))
    assert variant.service_factor == pytest.approx(service_factor) and variant.agreement == agreement


@pytest.mark.parametrize("content, words", [
    (None, "is missing: run `python -m bench.variants --write-speed`"),
    ("{not json", "not JSON"),
    ({"rows": {}}, "no 'variants' table"),
    ({"variants": {"int8": ROWS["int8"]}}, "has no variant 'distilled'"),
    ({"variants": {**ROWS, "distilled": {"mean_cosine": 0.9}}}, "'distilled' has no positive 'compute_speedup_vs_fp32_b32'"),
    ({"variants": {**ROWS, "distilled-int8": {"mean_cosine": -1}}}, "'distilled-int8' has no positive 'mean_cosine'"),
])
def test_a_bad_record_is_named(tmp_path: Path, content, words: str) -> None:
    path = tmp_path / "absent.json" if content is None else _write(tmp_path, content)
    measured.cache_clear()
    with pytest.raises(ValueError, match=None) as err:
        pool_b_variant("distilled-int8", path)
    assert words in str(err.value) and str(path) in str(err.value)


def test_an_unknown_variant_is_named() -> None:
    with pytest.raises(ValueError, match="unknown pool-B variant 'pruned'; known: int8, distilled-int8"):
        pool_b_variant("pruned")


def test_the_recorded_measurement_is_labelled_and_complete() -> None:
    data = measured()
    assert data["label"] == "measured on CPU, carried to the GPU profile"
    for name in ("int8", "distilled-int8"):
        assert pool_b_variant(name).agreement > 0
    assert speed_ratio("distilled", "compute_speedup_vs_fp32_b32") > 1
