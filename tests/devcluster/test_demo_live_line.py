"""When `forescale demo` prints its live line (demo.line_due): as soon as the operator's state changes.

Printed only every 5 s, the line lagged the events it explains by up to ~6 s
(the cadence plus a watch tick): EmergencyStarted appeared while the line
still said Stable.
"""

from __future__ import annotations

import dataclasses

import pytest

from forescale_devcluster.demo import LIVE_EVERY_SECONDS, Sample, line_due

STABLE = Sample(t=0.0, offered=20.0, p99_ms=180.0, forecast_p99_ms=240.0, ready={"a": 2, "b": 1},
                desired={"a": 2, "b": 1}, pods={"a": 2, "b": 1}, weights={"a": 100, "b": 0}, phase="Stable")


def _with(**changes) -> Sample:
    return dataclasses.replace(STABLE, **changes)


#: (case, sample, last shown, seconds since it was shown) -> printed now
CASES = [
    ("the first line", STABLE, None, 0.0, True),
    ("nothing changed, within the cadence", _with(t=2.0, p99_ms=900.0, offered=30.0), STABLE, 2.0, False),
    ("nothing changed, cadence reached", _with(t=5.0), STABLE, LIVE_EVERY_SECONDS, True),
    ("the phase changed", _with(phase="Emergency"), STABLE, 1.0, True),
    ("the weights changed", _with(weights={"a": 30, "b": 70}), STABLE, 1.0, True),
    ("the desired replicas changed", _with(desired={"a": 4, "b": 1}), STABLE, 1.0, True),
    ("only pods became ready: on the cadence", _with(ready={"a": 3, "b": 1}), STABLE, 1.0, False),
]


@pytest.mark.parametrize(("case", "sample", "shown", "since", "due"), CASES, ids=[c[0] for c in CASES])
def test_line_due(case, sample, shown, since, due):
    assert line_due(sample, shown, since) is due


def test_a_phase_change_is_shown_in_the_tick_it_is_read():
    """One sample a second, as the demo's watch loop takes them; the operator turns Emergency at t=7."""
    samples = [_with(t=float(t), phase="Emergency" if t >= 7 else "Stable") for t in range(12)]
    printed, shown = [], None
    for sample in samples:
        if line_due(sample, shown, 0.0 if shown is None else sample.t - shown.t):
            printed.append((sample.t, sample.phase))
            shown = sample
    assert printed == [(0.0, "Stable"), (5.0, "Stable"), (7.0, "Emergency")]
