"""The demo's live line and PNG timeline say what each number and mark is."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from forescale_devcluster.demo import DemoRun, Sample, live_line  # noqa: E402
from forescale_devcluster.demo_report import draw  # noqa: E402
from forescale_devcluster.demo_scenario import DemoSettings  # noqa: E402


def _sample(t: float, forecast: float | None = 240.0) -> Sample:
    return Sample(t=t, offered=20.0, p99_ms=180.0, forecast_p99_ms=forecast, ready={"a": 2, "b": 1},
                  desired={"a": 2, "b": 1}, pods={"a": 2, "b": 1}, weights={"a": 100, "b": 0}, phase="Stable")


def _run() -> DemoRun:
    run = DemoRun(settings=DemoSettings())
    run.samples = [_sample(float(t)) for t in range(0, 200, 5)]
    run.incident = {"kind": "slowdown", "pool": "a", "factor": 2.5, "start": 60.0, "seconds": 90.0}
    run.events = [(70.0, "EmergencyStarted", "..."), (120.0, "Recovered", "..."), (180.0, "CutbackCompleted", "...")]
    return run


def test_the_live_line_says_the_forecast_is_the_upper_band():
    assert "forecast upper band    240 ms" in live_line(_sample(12.0))
    assert "forecast upper band    -   ms" in live_line(_sample(12.0, forecast=None))


def test_every_mark_of_the_timeline_has_a_legend_entry():
    fig = draw(_run())
    try:
        legends = [[text.get_text() for text in ax.get_legend().get_texts()] for ax in fig.axes]
        assert all("incident: pool a x2.5 slower" in labels for labels in legends)
        assert "SLO" in legends[1] and "forecast peak p99 (upper band)" in legends[1]
        assert legends[3].count("operator event (named beside it)") == 1
    finally:
        plt.close(fig)
