"""Hardening campaigns of issue 19, long form (`make bench`): the adversarial families of tests/campaigns
with more examples (default 500 per property, child names and clock jumps a third and a quarter of that,
two-scope schedules a tenth) and every hostile chart text for every string value.

Families: HTTP parser and request bodies, random resource names (collision and
child repair), clock jumps, two-scope operators (four scenarios of two real
operator processes, and drawn in-process schedules of kills, stops, restarts
and Lease faults), adversarial chart values, adversarial CLI files.
Prints the cases tried per family; exits non-zero if any property failed.
Usage: python -m bench.campaign_hardening [--examples N]
"""

from __future__ import annotations

import argparse
import sys
import time

from bench._campaign_common import run_pytest

FILES = ["test_http_parser_fuzz.py", "test_child_names_campaign.py", "test_clock_jumps_campaign.py",
         "test_two_scope_operators.py", "test_hostile_chart_values.py", "test_hostile_cli_files.py"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500, help="hypothesis examples per property (default 500)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    rc, tally = run_pytest(FILES, examples=args.examples, extra_env={"FORESCALE_CHART_VARIANTS": "10"})
    print(f"\n{'family':<48} {'cases':>8}")
    for surface, count in sorted(tally["inputs"].items()):
        print(f"{surface:<48} {count:>8}")
    print(f"{'total':<48} {sum(tally['inputs'].values()):>8}")
    print(f"\npytest exit {rc} after {time.monotonic() - started:.0f} s "
          f"({'every property held' if rc == 0 else 'a property failed: see above'}; shared 2-core machine: timings are noisy)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
