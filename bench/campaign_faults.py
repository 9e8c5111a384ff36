"""Fault campaign, long form (`make bench`): more seeds and more kills than tests/campaigns.

1. The operator killed at seeded random API calls, several times in every
   phase (kill probability 0.5 per tick), over `--seeds` runs, in-process.
2. The short-form fault tests (Prometheus down/slow/NaN/empty/garbage, API
   409/429/500 and dropped watches, pod killed during a precision switch)
   run once more under pytest.

Prints a table of faults tried and survived; exits non-zero if any did not.
Usage: python -m bench.campaign_faults [--seeds N] [--no-stack]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import sys
import time
from collections import Counter

import yaml

from bench._campaign_common import CAMPAIGNS, ROOT, print_faults, run_pytest

sys.path.insert(0, str(CAMPAIGNS))

from loop_rig import LoopRig, spec_body  # noqa: E402
from restart_campaign import run_with_kills  # noqa: E402

from forescale_devcluster.apiserver import start_apiserver  # noqa: E402
from forescale_operator.kube.http import Connection, HttpKubeApi  # noqa: E402


def _example(name: str = "minimal") -> dict:
    return copy.deepcopy(yaml.safe_load((ROOT / "crds" / "examples" / f"{name}.yaml").read_text()))


async def restart_campaign(seeds: int) -> tuple[dict[str, dict[str, int]], list[str]]:
    tried: Counter[str] = Counter()
    survived: Counter[str] = Counter()
    problems: list[str] = []
    for seed in range(seeds):
        handle = start_apiserver(ROOT / "crds", ready_deployments=True, namespaces=("default",))
        client = HttpKubeApi(Connection(handle.url))
        try:
            result = await run_with_kills(LoopRig(handle, client), spec_body(_example), seed, kill_probability=0.5,
                                          once_per_phase=False)
        finally:
            await client.close()
            handle.stop()
        for kill in result.kills:
            kind = f"operator killed in {kill.phase} (long form)"
            tried[kind] += 1
            survived[kind] += kill.ok
            if not kill.ok:
                problems.append(f"seed {seed}, tick {kill.tick}, call {kill.call}: {kill.problem}")
        kind = "whole run with kills: settles, <= 1 EmergencyStarted per incident"
        tried[kind] += 1
        survived[kind] += not result.problems
        problems += [f"seed {seed}: {p}" for p in result.problems]
    return {k: {"tried": tried[k], "survived": survived[k]} for k in tried}, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="runs of the restart campaign (default 20)")
    parser.add_argument("--no-stack", action="store_true", help="skip the process-level pod-kill scenario (~70 s)")
    args = parser.parse_args(argv)

    started = time.monotonic()
    faults, problems = asyncio.run(restart_campaign(args.seeds))
    print(f"restart campaign: {args.seeds} seeds in {time.monotonic() - started:.0f} s")
    files = ["test_prometheus_faults.py", "test_api_faults.py", "test_restart_every_phase.py"]
    if not args.no_stack:
        files.append("test_stack_pod_kill_and_token.py")
    rc, tally = run_pytest(files, examples=60)
    faults.update(tally["faults"])
    lost = print_faults(faults)
    for problem in problems[:20]:
        print(f"  not survived: {problem}")
    print(f"\n{sum(r['survived'] for r in faults.values())} of {sum(r['tried'] for r in faults.values())} faults survived "
          f"in {time.monotonic() - started:.0f} s (pytest exit {rc}; shared 2-core machine: timings are noisy)")
    return 1 if lost or rc else 0


if __name__ == "__main__":
    sys.exit(main())
