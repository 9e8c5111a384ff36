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


def _metric_sum(url: str, name: str) -> float:
    with urllib.request.urlopen(url + "/metrics", timeout=5) as resp:
        text = resp.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{"))


def test_request_mix_shift_and_memory_pressure_show_in_the_servers_series(stress, emulated_server, monkeypatch):
    """The diagnosis's request-mix and memory-pressure causes, injected for real: the server's
    input-length histogram sees the longer inputs, and refused allocations are counted and fail."""
    url, token_file = emulated_server
    monkeypatch.delenv("FORESCALE_ADMIN_TOKEN", raising=False)
    result = stress(
        "--url", url, "--start-rate", "20", "--step-percent", "0", "--step-seconds", "1", "--max-step-seconds", "2",
        "--max-seconds", "9", "--warmup-seconds", "0", "--request-timeout", "2", "--min-samples", "10",
        "--fault", "at=1s,input_scale=8,seconds=2", "--fault", "at=3.5s,memory_pressure=1,seconds=1",
        "--recovery-window", "1", "--fault-grace", "1", "--admin-token-file", str(token_file), "--quiet", "--json",
    )
    assert result.code == 0, result.err
    report = result.json()
    assert report["input_scale"] == 1.0
    assert [r["fault"] for r in report["recoveries"]] == ["input_scale=8 at=1s for 2s", "memory_pressure=1 at=3.5s for 1s"]
    assert all("error" not in r for r in report["recoveries"]), report["recoveries"]
    # every input is new: while memory pressure holds the whole device, each one is refused with a 503
    assert report["error_kinds"].get("http_503", 0) > 0
    assert _metric_sum(url, "forescale_oom_warnings_total") >= report["error_kinds"]["http_503"]
    # the stress inputs are 9-17 words plus a tag; eight times longer for two of the ~7 s
    count, total = _metric_sum(url, "forescale_input_tokens_count"), _metric_sum(url, "forescale_input_tokens_sum")
    assert count > 0 and total / count > 20, (count, total)
