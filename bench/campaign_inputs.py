"""Bad-input campaign, long form (`make bench`): the property-based tests of tests/campaigns with
more examples (default 500 per property instead of 60).

Surfaces: the CRD spec (schema, CEL, parse_spec), the model server's HTTP API
(a running `forescale serve --emulate-gpu demo`), the CSV and trace inputs of
`forescale backtest` and `forescale replay`. Prints the number of cases tried
per surface; exits non-zero if any property failed.
Usage: python -m bench.campaign_inputs [--examples N]
"""

from __future__ import annotations

import argparse
import sys
import time

from bench._campaign_common import run_pytest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500, help="hypothesis examples per property (default 500)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    rc, tally = run_pytest(["test_bad_spec.py", "test_bad_http.py", "test_bad_cli_inputs.py"], examples=args.examples)
    print(f"\n{'surface':<44} {'cases':>8}")
    for surface, count in sorted(tally["inputs"].items()):
        print(f"{surface:<44} {count:>8}")
    print(f"{'total':<44} {sum(tally['inputs'].values()):>8}")
    print(f"\npytest exit {rc} after {time.monotonic() - started:.0f} s "
          f"({'every property held' if rc == 0 else 'a property failed: see above'}; shared 2-core machine: timings are noisy)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
