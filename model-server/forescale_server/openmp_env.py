"""The OpenMP wait policy `forescale serve` starts torch with.

torch runs its intra-op work (one thread per core by default) on GNU OpenMP.
By default an OpenMP worker that finishes its share of an operator spins on
its core for a while, waiting for the others, instead of sleeping. That is
fine on a machine the process has to itself. A model server never does: it
shares its node with other pods, its own event loop and, in a load test, the
load generator. When another process holds the core that a worker needs,
the spinning workers wait for a descheduled thread and burn the CPU it could
have used, and every batch stalls behind it. Measured on the 2-core build
machine while other work ran (docs/stress.md): with 8 requests in flight the
real MiniLM server answered at a p50 of 0.7 to 1.5 s with the default policy,
and at 110 to 130 ms with `OMP_WAIT_POLICY=PASSIVE`, which makes a waiting
worker sleep at once.

torch's intra-op pool takes one thread per core by default, but the server
also runs its event loop (HTTP, tokenising, the batcher) on a thread of its
own. On the 2-core build machine, with 2 torch threads, `forescale stress`
against the plain server found a knee and a slope in 3 of 9 runs; with
`--threads 1` in 4 of 4, and at a held 18 req/s the median p99 of a 10 s step
was 172 ms against 245 (docs/stress.md). So `--threads 0` leaves one of the
CPUs this process may use to the event loop (`intra_op_threads`). Where the
user set `OMP_NUM_THREADS`, torch reads it and the server does not override it.

The OpenMP runtime reads its environment once, when it is loaded, which is
when torch is imported. So the default must be in the environment before
that import; set later, it would only make `os.environ` lie. A value the user
set (in a shell, or in the pod's `env`) always wins.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass

VARIABLE = "OMP_WAIT_POLICY"
DEFAULT = "PASSIVE"
#: modules whose import loads the OpenMP runtime torch uses
OPENMP_MODULES = ("torch",)


@dataclass(frozen=True)
class WaitPolicy:
    """What `prefer_passive_wait` did: `action` is `set` (the default went in),
    `kept` (the user's value stays) or `too_late` (torch was already imported,
    so the runtime has read its environment and nothing was changed).
    `value` is the value in the environment afterwards, or None."""

    action: str
    value: str | None


def prefer_passive_wait(environ: MutableMapping[str, str] | None = None,
                        modules: Mapping[str, object] | None = None) -> WaitPolicy:
    """Default `OMP_WAIT_POLICY` to PASSIVE in `environ` (the process environment)
    unless it is set, or unless an OpenMP user in `modules` (`sys.modules`) is
    already loaded."""
    import sys

    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    if VARIABLE in environ:
        return WaitPolicy("kept", environ[VARIABLE])
    if any(name in modules for name in OPENMP_MODULES):
        return WaitPolicy("too_late", None)
    environ[VARIABLE] = DEFAULT
    return WaitPolicy("set", DEFAULT)


def intra_op_threads(requested: int, environ: Mapping[str, str] | None = None, cpus: int | None = None) -> int:
    """torch's intra-op threads for `--threads requested`: the request when positive; else 0
    (torch's own default) when the user set OMP_NUM_THREADS; else the usable CPUs less
    one for the event loop, at least 1 (module docstring)."""
    if requested > 0:
        return requested
    environ = os.environ if environ is None else environ
    if "OMP_NUM_THREADS" in environ:
        return 0
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cpus - 1)
