"""Process kills for chaos tests. Allowed only against a loopback target: a
PID means nothing on another machine, and killing a local process because a
remote URL was typed would hit the wrong thing."""

from __future__ import annotations

import os
import signal as signals
from typing import Callable

from forescale_stress.errors import StressError
from forescale_stress.faults import FaultSpec
from forescale_stress.target import Target

SIGNALS = {"kill": signals.SIGKILL, "term": signals.SIGTERM}


def check_kill_allowed(target: Target, fault: FaultSpec, probe: Callable[[int, int], None] = os.kill) -> None:
    """Refuse a kill fault unless the URL is loopback and the PID is a live
    process this user may signal (and not this process). `probe` is `os.kill`,
    injected so tests need no real processes."""
    pid = fault.pid
    if not target.is_loopback:
        raise StressError(
            f"refusing to kill PID {pid}: the target host {target.host} is not a loopback address; "
            "process kills are allowed only against a local target (localhost, 127.0.0.1, ::1)"
        )
    if pid is None or pid < 2 or pid == os.getpid():
        raise StressError(f"refusing to kill PID {pid}: not a target process")
    try:
        probe(pid, 0)
    except ProcessLookupError:
        raise StressError(f"cannot kill PID {pid}: no such process") from None
    except PermissionError:
        raise StressError(f"cannot kill PID {pid}: not allowed to signal it") from None


def kill(fault: FaultSpec, send: Callable[[int, int], None] = os.kill) -> str | None:
    """Send the fault's signal; returns an error message or None."""
    try:
        send(fault.pid, SIGNALS[fault.signal])
    except ProcessLookupError:
        return f"PID {fault.pid} was already gone"
    except PermissionError:
        return f"not allowed to signal PID {fault.pid}"
    return None
