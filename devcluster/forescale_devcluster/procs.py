"""Lifecycle helpers for the local processes the stand-ins start.

The pod runner starts one model-server process per emulated pod and the demo
starts Prometheus. Both need the same three things: a free local port, a
process that dies with its parent, and a stop that escalates from SIGTERM to
SIGKILL, addressed by PID only (never by name: other helpers run their own
servers on the same machine).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

#: prctl option that delivers a signal to the child when its parent dies.
_PR_SET_PDEATHSIG = 1


#: Ports this process has handed out. The kernel picks port 0's port at random
#: from the ephemeral range, so two calls a moment apart can return the same
#: just-released port (an operator once got the same one for its metrics and
#: its health endpoint); a port handed out once is never handed out again.
_handed_out: set[int] = set()


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free on `host` a moment ago and that this process has not handed out before.

    The port is released before it is returned, so another process may take it
    first; callers that start a server on it restart on failure.
    """
    for _ in range(64):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise OSError(f"no fresh free port on {host}: {len(_handed_out)} ports already handed out by this process")


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this child when the process that forked it dies.

    Without it a crashed test or demo leaves model servers running on the
    shared CPUs. Other platforms simply skip it.
    """
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def popen(args: list[str], *, env: dict[str, str] | None = None, log_path: str | None = None) -> subprocess.Popen:
    """Start `args` as a child process that dies with this one.

    Output goes to `log_path` (appended) or is discarded, never to our own
    terminal, where it would drown the demo's live line.
    """
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(  # noqa: S603 - args come from our own configuration
            args, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - only calls prctl
        )
    finally:
        if log_path:
            out.close()


async def aspawn(args: list[str], *, env: dict[str, str] | None = None,
                 log_path: str | None = None) -> asyncio.subprocess.Process:
    """Async twin of :func:`popen`, for callers inside an event loop."""
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    try:
        return await asyncio.create_subprocess_exec(
            *args, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,  # noqa: PLW1509
        )
    finally:
        if log_path:
            out.close()


def _signal(pid: int, sig: int) -> bool:
    """Send `sig` to `pid`; False when the process is already gone."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def stop_process(proc: subprocess.Popen, grace_seconds: float = 5.0) -> int | None:
    """SIGTERM `proc`, wait up to `grace_seconds`, then SIGKILL; return its exit code."""
    if proc.poll() is not None:
        return proc.returncode
    _signal(proc.pid, signal.SIGTERM)
    try:
        return proc.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        _signal(proc.pid, signal.SIGKILL)
        return proc.wait(timeout=5.0)


async def astop_process(proc: asyncio.subprocess.Process, grace_seconds: float = 5.0) -> int | None:
    """Async twin of :func:`stop_process`."""
    if proc.returncode is not None:
        return proc.returncode
    _signal(proc.pid, signal.SIGTERM)
    try:
        return await asyncio.wait_for(proc.wait(), grace_seconds)
    except asyncio.TimeoutError:
        _signal(proc.pid, signal.SIGKILL)
        return await asyncio.wait_for(proc.wait(), 5.0)


def http_ok(url: str, timeout: float = 1.0) -> bool:
    """True when GET `url` answers 2xx within `timeout` seconds."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - local URLs only
            return 200 <= resp.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def wait_http_ok(url: str, timeout: float, *, proc: subprocess.Popen | None = None,
                 interval: float = 0.1) -> None:
    """Block until GET `url` answers 2xx.

    Raises TimeoutError after `timeout` seconds, or RuntimeError at once when
    `proc` exits first (a server that crashed will never answer).
    """
    deadline = time.monotonic() + timeout
    while True:
        if http_ok(url, timeout=min(1.0, timeout)):
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process {proc.pid} exited with code {proc.returncode} before {url} answered")
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{url} did not answer within {timeout:g} s")
        time.sleep(interval)


async def wait_for_termination() -> None:
    """Return when this process gets SIGINT or SIGTERM (for the stand-ins' command lines)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def wait_event(event: asyncio.Event, timeout: float) -> bool:
    """Wait until `event` is set or `timeout` seconds pass; True when it was set.

    Not `asyncio.wait_for(event.wait(), timeout)`: on Python 3.11 that can
    swallow a cancellation arriving as the event is set, and a loop written
    with it then never stops.
    """
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({waiter}, timeout=timeout)
    finally:
        waiter.cancel()
    return event.is_set()
