"""The demo's summary names the diagnosis: the one at the playbook's start when there is one, else the first."""

from __future__ import annotations

import pytest

from forescale_devcluster.demo import DemoRun
from forescale_devcluster.demo_report import summary, table_lines
from forescale_devcluster.demo_scenario import DemoSettings

OVERLOAD, PLAYBOOK = (186.9, "Overload", ""), (197.0, "EmergencyStarted", "")


@pytest.mark.parametrize("events, expected, row", [
    # an overload's diagnosis first, then the playbook's: the playbook's is the incident's
    ([OVERLOAD, (186.9, "RootCauseSuspected", "Overload suspected"), PLAYBOOK, (201.0, "RootCauseSuspected", "Degraded")],
     {"message": "Degraded", "at": 201.0, "after_relief_seconds": 4.0}, "Degraded (4 s after the relief started)"),
    ([OVERLOAD, (186.9, "RootCauseSuspected", "Overload suspected")],
     {"message": "Overload suspected", "at": 186.9, "after_relief_seconds": 0.0}, "Overload suspected (0 s after"),
    ([PLAYBOOK], None, "none suspected"),  # the diagnosis ran and suspected nothing, or no incident
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
