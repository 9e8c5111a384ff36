"""Diagnosis campaign, KV-cache form: the cache failure as a leaking KV cache on a decoder stack, end to end.

`python -m bench.diagnosis --kv-cache --causes cache-failure --controls 1`, run by `make bench` beside the
encoder campaign (bench/diagnosis.py), whose cache failure is the result cache's: the demo stack serving
`a100-opt-13b` decoders, every pool-A server's KV blocks leaked with the server's own `kv_fragmentation`
fault, 5 incidents and 1 control run, two lanes side by side. Goals: the top-ranked cause right in >= 90%
of the 5, the control run clean, `RootCauseSuspected` within 60 s of the relief. Exit 1 when one is missed.

Usage: python -m bench.diagnosis_kv [any bench.diagnosis option, e.g. --seed 3 --per-cause 2]
"""

from __future__ import annotations

import sys

from bench.diagnosis import main as diagnosis_main

#: what `make bench` runs: the KV cache's failure 5 times and one control run
ARGS = ("--kv-cache", "--causes", "cache-failure", "--per-cause", "5", "--controls", "1")


def main(argv: list[str] | None = None) -> int:
    # later options win with argparse, so a caller's --seed or --per-cause overrides the defaults here
    return diagnosis_main([*ARGS, *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
