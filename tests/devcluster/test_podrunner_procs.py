"""Process lifecycle helpers the pod runner and the Prometheus process rely on."""

from __future__ import annotations

import asyncio
import signal
import sys

import pytest

from forescale_devcluster import procs

pytestmark = pytest.mark.timeout(30)

#: a child that ignores SIGTERM, so only SIGKILL stops it
STUBBORN = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('up', flush=True); time.sleep(60)"]


def test_stop_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path):
    log = str(tmp_path / "child.log")
    proc = procs.popen(STUBBORN, log_path=log)
    for _ in range(100):  # wait until the handler is installed
        if open(log).read():
            break
        asyncio.run(asyncio.sleep(0.05))
    assert procs.stop_process(proc, grace_seconds=0.3) == -signal.SIGKILL
    assert procs.stop_process(proc) == -signal.SIGKILL  # stopping twice is harmless


async def test_async_stop_sends_sigterm_first():
    proc = await procs.aspawn([sys.executable, "-c", "import time; time.sleep(60)"])
    assert await procs.astop_process(proc, grace_seconds=5) == -signal.SIGTERM


async def test_wait_event_returns_early_when_set_and_false_on_timeout():
    event = asyncio.Event()
    asyncio.get_running_loop().call_later(0.05, event.set)
    started = asyncio.get_running_loop().time()
    assert await procs.wait_event(event, 5.0) is True
    assert asyncio.get_running_loop().time() - started < 1.0
    assert await procs.wait_event(asyncio.Event(), 0.05) is False


async def test_wait_event_never_swallows_a_cancellation():
    # The event is set in the same loop iteration as the cancellation: the
    # race in which Python 3.11's wait_for returns instead of raising.
    for _ in range(50):
        event = asyncio.Event()
        task = asyncio.create_task(procs.wait_event(event, 5.0))
        await asyncio.sleep(0)
        event.set()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def test_wait_http_ok_names_the_problem():
    port = procs.free_port()
    with pytest.raises(TimeoutError, match=f"127.0.0.1:{port}/ready did not answer within 0.3 s"):
        procs.wait_http_ok(f"http://127.0.0.1:{port}/ready", 0.3)
    dead = procs.popen([sys.executable, "-c", "raise SystemExit(3)"])
    dead.wait()
    with pytest.raises(RuntimeError, match="exited with code 3 before"):
        procs.wait_http_ok(f"http://127.0.0.1:{port}/ready", 5, proc=dead)


def test_free_port_is_bindable():
    import socket

    port = procs.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
    assert 0 < port < 65536


def test_free_port_never_hands_out_a_port_twice():
    # The kernel picks from ~28,000 ephemeral ports at random, so 600 bare binds
    # repeat one almost surely (birthday bound: 1 - exp(-600²/56,000) > 0.99);
    # an operator once got one port for both its metrics and its health endpoint.
    ports = [procs.free_port() for _ in range(600)]
    assert len(set(ports)) == len(ports)
