"""`forescale replay --peer-utilization U --load-scale X` (DESIGN.md §6 "Frontier"), through the dispatcher."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forescale_cli.main import main


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["replay", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("extra, utilization, scale", [
    ([], 0.7, 1.0),                                   # the defaults, printed
    (["--peer-utilization", "0.4"], 0.4, 1.0),
    (["--peer-utilization", "1.5"], 1.5, 1.0),        # the upper bound is allowed
    (["--load-scale", "3"], 0.7, 3.0),
    (["--peer-utilization", "0.9", "--load-scale", "2"], 0.9, 2.0),
])
def test_options_reach_the_json(azure_slice: Path, capsys, extra: list[str], utilization: float, scale: float) -> None:
    code, out, err = run(capsys, "--trace", str(azure_slice), "--format", "azure", "--policies", "hpa,kpa,static,oracle",
                         "--incidents", "none", "--json", *extra)
    assert code == 0, err
    data = json.loads(out)
    assert data["peer_utilization"] == utilization and data["load_scale"] == scale
    capacity = data["calibration"]["capacity_rps_at_slo"]["fp16"]
    assert data["calibration"]["peer_utilization"] == utilization
    for name in ("hpa", "kpa", "static"):  # every peer sized from U x the calibrated capacity
        assert data["policies"][name]["target_per_pod"] == pytest.approx(utilization * capacity, rel=1e-3)
    for name, row in data["policies"].items():
        assert row["requests"] == 2000 * scale, name  # X copies of the 2,000 requests
        assert set(row["peak_replicas"]) == {"a", "b"} and row["peak_replicas"]["a"] >= 1


@pytest.mark.parametrize("utilization", ["0.4", "0.9"])
def test_a_lower_target_runs_more_pods(azure_slice: Path, capsys, utilization: str) -> None:
    """The peers at U against the default 0.7: fewer pods per unit of load at higher U."""
    rows = {}
    for u in (utilization, "0.7"):
        code, out, err = run(capsys, "--trace", str(azure_slice), "--format", "azure", "--policies", "hpa",
                             "--incidents", "none", "--json", "--peer-utilization", u)
        assert code == 0, err
        rows[u] = json.loads(out)["policies"]["hpa"]
    lower, higher = sorted(rows, key=float)
    assert rows[lower]["gpu_hours"] > rows[higher]["gpu_hours"]


def test_rate_trace_is_scaled_by_x(servegen_slice: Path, capsys) -> None:
    counts = {}
    for x in ("1", "2.5"):
        code, out, err = run(capsys, "--trace", str(servegen_slice), "--format", "servegen", "--json",
                             "--policies", "hpa", "--incidents", "none", "--load-scale", x)
        assert code == 0, err
        counts[x] = json.loads(out)["policies"]["hpa"]["requests"]
    assert counts["2.5"] == pytest.approx(2.5 * counts["1"], rel=1e-3)


BAD = [
    ("--peer-utilization", "0", "must be a number in (0, 1.5]"),
    ("--peer-utilization", "-0.5", "must be a number in (0, 1.5]"),
    ("--peer-utilization", "1.6", "must be a number in (0, 1.5]"),
    ("--peer-utilization", "nan", "must be a number in (0, 1.5]"),
    ("--peer-utilization", "inf", "must be a number in (0, 1.5]"),
    ("--peer-utilization", "seventy", "must be a number, got 'seventy'"),
    ("--load-scale", "0", "must be a finite number >= 1"),
    ("--load-scale", "-3", "must be a finite number >= 1"),
    ("--load-scale", "0.5", "must be a finite number >= 1"),
    ("--load-scale", "nan", "must be a finite number >= 1"),
    ("--load-scale", "inf", "must be a finite number >= 1"),
    ("--load-scale", "ten", "must be a number, got 'ten'"),
    ("--load-scale", "2.5", "whole number for a request trace"),
]


@pytest.mark.parametrize("flag, value, words", BAD, ids=[f"{f}={v}" for f, v, _ in BAD])
def test_bad_values_are_one_line_naming_the_flag(azure_slice: Path, capsys, flag: str, value: str, words: str) -> None:
    code, out, err = run(capsys, "--trace", str(azure_slice), "--format", "azure", "--policies", "hpa",
                         "--incidents", "none", flag, value)
    assert code == 2
    assert out == ""
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith(("reading ", "calibration "))]
    assert len(lines) == 1, err
    assert flag in lines[0] and words in lines[0]
    assert "Traceback" not in err
