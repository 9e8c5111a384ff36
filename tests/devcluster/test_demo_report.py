"""The demo's report: the live line and PNG timeline say what each number and mark is, and the summary
names the diagnosis (the one at the playbook's start when there is one, else the first)."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from forescale_devcluster.demo import DemoRun, Sample, live_line  # noqa: E402
from forescale_devcluster.demo_report import draw, summary, table_lines  # noqa: E402
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


OVERLOAD, PLAYBOOK = (186.9, "Overload", ""), (197.0, "EmergencyStarted", "")


@pytest.mark.parametrize("events, expected, row", [
    # an overload's diagnosis first, then the playbook's: the playbook's is the incident's
    ([OVERLOAD, (186.9, "RootCauseSuspected", "Overload suspected"), PLAYBOOK, (201.0, "RootCauseSuspected", "Degraded")],
     {"message": "Degraded", "at": 201.0, "after_relief_seconds": 4.0}, "Degraded (4 s after the relief started)"),
    ([OVERLOAD, (186.9, "RootCauseSuspected", "Overload suspected")],
     {"message": "Overload suspected", "at": 186.9, "after_relief_seconds": 0.0}, "Overload suspected (0 s after"),
    ([PLAYBOOK], None, "none suspected"),  # the diagnosis ran and suspected nothing, or no incident
    # the playbook's diagnosis said overload, and its second look one window later named degraded pods: the later word
    ([PLAYBOOK, (197.0, "RootCauseSuspected", "Overload suspected"),
      (208.0, "RootCauseSuspected", "Degraded pods suspected: x. A second look 10 s after the first diagnosis, ...")],
     {"message": "Degraded pods suspected: x. A second look 10 s after the first diagnosis, ...", "at": 208.0,
      "after_relief_seconds": 11.0}, "Degraded pods suspected: x. A second look"),
    # a later diagnosis that is no second look (the next relief's) does not replace the playbook's
    ([PLAYBOOK, (197.0, "RootCauseSuspected", "Overload suspected"), (260.0, "Overload", ""),
      (260.0, "RootCauseSuspected", "Cache failure suspected")],
     {"message": "Overload suspected", "at": 197.0, "after_relief_seconds": 0.0}, "Overload suspected (0 s after"),
])
def test_the_summary_names_the_incidents_diagnosis(events, expected, row):
    run = DemoRun(DemoSettings())
    run.events = events
    result = summary(run)
    assert result["root_cause"] == expected
    assert any(line.startswith("root cause") and row in line for line in table_lines(result))


def test_the_demo_runs_the_diagnosis_on_its_own_clock():
    assert DemoSettings().operator_env() == {"FORESCALE_DIAGNOSIS_NOW_SECONDS": "10",
                                             "FORESCALE_DIAGNOSIS_BEFORE_SECONDS": "200"}
