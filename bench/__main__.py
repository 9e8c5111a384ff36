"""Run every benchmark module in this folder, one after another: `make bench`.

Each module is run as `python -m bench.<name>` in its own process, so one
benchmark's threads and memory never colour the next one's figures. Pass
names to run a subset: `python -m bench predictor_speed replay_goal`.
These machines are shared and noisy: every benchmark compares side by side in
one run and prints ratios rather than trusting absolute times.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent


def discover() -> list[str]:
    """Benchmark module names: every bench/*.py except the package files."""
    return sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))


def main(argv: list[str]) -> int:
    names = argv or discover()
    unknown = sorted(set(names) - set(discover()))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(discover())}", file=sys.stderr)
        return 2
    failed = []
    for name in names:
        print(f"\n===== bench.{name} =====", flush=True)
        started = time.monotonic()
        rc = subprocess.call([sys.executable, "-m", f"bench.{name}"])
        print(f"===== bench.{name}: exit {rc} in {time.monotonic() - started:.0f} s =====", flush=True)
        if rc != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
