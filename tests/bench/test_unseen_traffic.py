"""bench/unseen_traffic.py: the cases it plans (none of the frontier's) and its two goals on hand-made figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import frontier, unseen_traffic
from bench.unseen_traffic import evaluate, plan


def _fs(peak_a: int, emergencies: int = 0, mttr: float = 0.0) -> dict:
    return {"peak_a": peak_a, "emergencies": emergencies, "mttr_seconds": mttr, "gpu_hours": 1.0, "violation_seconds": 0.0}


@pytest.mark.parametrize("forescale, oracle_peak, incident, expected", [
    (_fs(6), 4, False, {"peak": True, "no-emergency": True}),            # 6 <= 1.5 x 4
    (_fs(7), 4, False, {"peak": False, "no-emergency": True}),           # 7 > 6
    (_fs(1), 1, False, {"peak": True, "no-emergency": True}),
    (_fs(3, emergencies=1), 4, False, {"peak": True, "no-emergency": False}),
    # with the incident the playbook is expected: MTTR is the goal, not the emergency count
    (_fs(3, emergencies=1, mttr=59.9), 4, True, {"peak": True, "mttr": True}),
    (_fs(3, emergencies=1, mttr=60.0), 4, True, {"peak": True, "mttr": False}),
])
def test_goals(forescale: dict, oracle_peak: int, incident: bool, expected: dict) -> None:
    goals = evaluate(forescale, {"peak_a": oracle_peak}, incident)
    assert {name: g["met"] for name, g in goals.items()} == expected
    assert str(forescale["peak_a"]) in goals["peak"]["check"]


def test_the_cases_lie_outside_the_frontier(tmp_path: Path) -> None:
    cases = plan(tmp_path, traces=Path("/nowhere"))
    assert len({(c.label, c.scale, c.seed, c.incident) for c in cases}) == len(cases)
    # every case runs once without the incident and once with it
    assert sorted((c.label, c.scale, c.seed) for c in cases if c.incident) == \
        sorted((c.label, c.scale, c.seed) for c in cases if not c.incident)
    scaled = {(f"synth-{family} mean {mean:g} peak {peak:g}", scale) for family, mean, peak, scale in unseen_traffic.SCALED_SHAPES}
    for case in cases:
        if case.label.startswith("synth-"):
            # the frontier replays synthetic traffic at seeds 0-2 and at 1x only
            assert case.seed not in (0, 1, 2) and Path(case.path).stat().st_size > 0
            assert case.scale == 1.0 or (case.label, case.scale) in scaled
        else:
            assert case.label in frontier.DEV_TRACES and case.scale not in (1.0, 10.0)
            assert case.path.startswith("/nowhere/")
    shapes = len(unseen_traffic.SHAPES) + len(unseen_traffic.SCALED_SHAPES)
    assert sum(c.label.startswith("synth-") for c in cases) == 2 * shapes * len(unseen_traffic.SEEDS)
    assert {(c.label, c.scale) for c in cases} >= scaled


@pytest.mark.parametrize("args, words", [
    (["--jobs", "0"], "--jobs must be at least 1, got 0"),
    (["--forecaster", "prophet"], "--forecaster must be one of lstm, clairvoyant, last"),
])
def test_bad_flags_are_named(capsys: pytest.CaptureFixture[str], args: list[str], words: str) -> None:
    assert unseen_traffic.main(args) == 2
    assert words in capsys.readouterr().err


def test_the_forecaster_reaches_the_engine(tmp_path: Path) -> None:
    """A ten-minute case replayed for real: the engine is fed the forecaster asked for."""
    from forescale_sim.synthetic import Shape, write_azure_csv

    path = write_azure_csv(Shape("ramp", seconds=600, mean=1.0, peak=4.0, seed=3), tmp_path / "ramp.csv")
    case = unseen_traffic.Case("synth-ramp", str(path), "azure", 1.0, 3)
    runs = {name: unseen_traffic.replay(case, forecaster=name) for name in ("clairvoyant", "last")}
    assert {name: set(run) for name, run in runs.items()} == {name: set(unseen_traffic.POLICIES) for name in runs}
    assert set(runs["clairvoyant"]["forescale"]["forecast_models"]) == {"clairvoyant"}
    assert set(runs["last"]["forescale"]["forecast_models"]) == {"last"}
