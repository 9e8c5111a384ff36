"""The chart's CRD templates are exactly what devtools/gen_chart_crds.py makes of crds/ (DESIGN.md §5)."""

from __future__ import annotations

import subprocess
import sys

from chart_tools import CHART, REPO

GENERATOR = REPO / "devtools" / "gen_chart_crds.py"


def test_chart_crds_match_top_level_crds():
    """Fails on any drift: a CRD edited in crds/ but not regenerated, a hand edit, a stale file."""
    result = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, (
        "the chart's CRD templates differ from crds/: run `make crds-chart` "
        f"(python devtools/gen_chart_crds.py) and commit the result.\n{result.stderr}"
    )


def test_every_crd_has_a_template():
    """Each CRD file of crds/ (examples aside) has its template, so helm installs all of them."""
    sources = sorted(p.name for p in (REPO / "crds").glob("*.yaml"))
    templates = sorted(p.name for p in (CHART / "templates" / "crds").glob("*.yaml"))
    assert sources == templates
