"""Campaign: adversarial chart values (issue 19, defect 12). Short form: the first FORESCALE_CHART_VARIANTS
(2) hostile texts for every string value; the long form (bench.campaign_hardening) tries all of them."""

from __future__ import annotations

import os

import pytest

from chart_values_campaign import HOSTILE, benign_for, check, merged, string_leaves

VARIANTS = int(os.environ.get("FORESCALE_CHART_VARIANTS", "2"))
VALUES = merged()
LEAVES = list(string_leaves(VALUES))


@pytest.mark.parametrize("path,original", LEAVES, ids=[".".join(map(str, p)) for p, _ in LEAVES])
def test_a_hostile_string_value_is_refused_or_changes_nothing_else(tmp_path, tally, path, original):
    pytest.importorskip("yaml")
    for hostile in HOSTILE[:VARIANTS]:
        with tally.attempt(f"chart value {check(VALUES, path, benign_for(original), hostile, tmp_path)}"):
            pass
        tally.cases("chart values", 1)


def test_the_reported_injection_is_gone(tmp_path):
    """The adversarial pass's own cases: priorityClassName and metrics.dashboard.namespace."""
    for path in (("priorityClassName",), ("metrics", "dashboard", "namespace")):
        assert check(VALUES, path, "safe1", "x\nhostNetwork: true\nhostPID: true", tmp_path) == "refused"
