"""`forescale stress` against the real model server in emulated-GPU mode
(`forescale serve --emulate-gpu demo --enable-faults`, no torch): a short
ramp with one slowdown fault, parsed from --json."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest


def _serve_available() -> bool:
    return importlib.util.find_spec("forescale_server.cli") is not None


@pytest.fixture
def emulated_server(tmp_path):
    if not _serve_available():
        pytest.skip("forescale serve (forescale_server.cli) is not available in this build yet")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token_file = tmp_path / "token"
    token_file.write_text("real-server-token-123")
    env = {**os.environ, "FORESCALE_ADMIN_TOKEN_FILE": str(token_file)}
    env.pop("FORESCALE_ADMIN_TOKEN", None)
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "forescale_cli.main", "serve", "--emulate-gpu", "demo", "--port", str(port),
         "--enable-faults"], stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=1) as resp:
                if resp.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"forescale serve did not become ready: {(tmp_path / 'serve.log').read_text()[-2000:]}")
        time.sleep(0.2)
    yield url, token_file
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    log.close()


def test_ramp_with_a_slowdown_against_forescale_serve(stress, emulated_server, monkeypatch):
    url, token_file = emulated_server
    monkeypatch.delenv("FORESCALE_ADMIN_TOKEN", raising=False)
    result = stress(
        # 50 inputs: mostly cache hits, so the emulated fp32 server stays
        # under the SLO on a shared CPU and the test is about the tool.
        "--url", url, "--start-rate", "50", "--distinct-inputs", "50", "--step-seconds", "1", "--max-step-seconds", "2", "--max-seconds", "7",
        "--warmup-seconds", "0",
        "--request-timeout", "2", "--fault", "at=2s,slowdown=3,seconds=1", "--recovery-window", "1",
        "--fault-grace", "1", "--admin-token-file", str(token_file), "--quiet", "--json",
    )
    assert result.code == 0, result.err
    assert "real-server-token-123" not in result.out + result.err
    report = result.json()
    assert len(report["steps"]) >= 2
    assert report["errors"] == 0
    measured = [s for s in report["steps"] if s["p99_ms"] is not None]
    assert measured and all(0 < s["p50_ms"] <= s["p99_ms"] for s in measured)
    # the ramp holds its rate after each step that overlaps the fault window
    steps = report["steps"]
    assert any(s["during_fault"] for s in steps)
    for this, after in zip(steps, steps[1:]):
        assert (after["rate"] == this["rate"]) == this["during_fault"], steps
    (recovery,) = report["recoveries"]
    assert recovery["fault"] == "slowdown=3 at=2s for 1s"
    assert "error" not in recovery, recovery
    assert recovery["baseline_p99_ms"] is not None
    assert report["stopped_because"] in ("max_seconds", "slo")
