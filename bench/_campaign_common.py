"""Shared by bench/campaign_faults.py and bench/campaign_inputs.py: run campaign tests under pytest in a
subprocess with more examples, and read back what they tried (tests/campaigns/campaign_tally.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGNS = ROOT / "tests" / "campaigns"


def run_pytest(files: list[str], examples: int, extra_env: dict[str, str] | None = None) -> tuple[int, dict]:
    """Run the campaign test files; returns pytest's exit code and the tally it wrote."""
    with tempfile.TemporaryDirectory(prefix="forescale-campaign-") as tmp:
        env = {**os.environ, "FORESCALE_CAMPAIGN_EXAMPLES": str(examples), **(extra_env or {})}
        args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={tmp}/t",
                *[str(CAMPAIGNS / f) for f in files]]
        rc = subprocess.call(args, cwd=ROOT, env=env)
        summary = Path(tmp) / "t" / "campaign-summary.json"
        return rc, json.loads(summary.read_text()) if summary.exists() else {"faults": {}, "inputs": {}}


def print_faults(faults: dict[str, dict[str, int]]) -> int:
    """A table of faults tried / survived; returns how many did not survive."""
    print(f"\n{'fault':<52} {'tried':>6} {'survived':>9}")
    lost = 0
    for kind in sorted(faults):
        row = faults[kind]
        lost += row["tried"] - row["survived"]
        print(f"{kind:<52} {row['tried']:>6} {row['survived']:>9}")
    total_tried = sum(r["tried"] for r in faults.values())
    total_survived = sum(r["survived"] for r in faults.values())
    print(f"{'total':<52} {total_tried:>6} {total_survived:>9}")
    return lost
