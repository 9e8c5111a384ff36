"""`forescale stress` end to end against the fake model server: short real
runs parsed from --json, each stop condition, faults, degradations, a kill,
and every bad input the issue lists (one clear line, non-zero exit)."""

from __future__ import annotations

import os
import signal

import pytest

from stress_server import start_fake_server

# Tests about other things skip the 30 s warm-up (test_warmup.py covers it).
NO_WARMUP = ["--warmup-seconds", "0", "--probe-warmup-seconds", "0"]
FAST = ["--step-seconds", "1", "--max-step-seconds", "2", "--min-samples", "20", "--request-timeout", "2",
        "--quiet", "--json", *NO_WARMUP]


@pytest.fixture(autouse=True)
def no_ambient_token(monkeypatch):
    monkeypatch.delenv("FORESCALE_ADMIN_TOKEN", raising=False)
    monkeypatch.delenv("FORESCALE_ADMIN_TOKEN_FILE", raising=False)


def test_short_ramp_reports_every_step(stress, plain_server, tmp_path):
    plot = tmp_path / "out.png"
    result = stress("--url", plain_server.url, "--start-rate", "100", "--max-rate", "125", "--plot", str(plot), *FAST)
    assert result.code == 0, result.err
    report = result.json()
    assert [s["rate"] for s in report["steps"]] == [100.0, 110.0, 121.0]
    assert report["stopped_because"] == "max_rate"  # 133.1 would exceed 125
    for step in report["steps"]:
        assert set(step) >= {"rate", "achieved_rate", "samples", "p50_ms", "p99_ms", "p999_ms", "errors"}
        assert step["samples"] >= 100 and step["errors"] == 0
        assert 0 < step["p50_ms"] <= step["p99_ms"] < 1000
        assert step["p999_ms"] is None  # p999 needs 1000 samples
        assert 0.5 * step["rate"] < step["achieved_rate"] < 1.5 * step["rate"]
    assert report["knee_rps"] == report["steps"][-1]["achieved_rate"] and report["knee_step"] == 2
    assert report["knee_crossed_slo"] is False
    assert isinstance(report["slope_ms_per_rps"], float)
    assert report["slope_steps"] == [0, 1, 2]
    assert report["generator_cpu_seconds"] > 0
    assert report["recoveries"] == [] and report["degradations"] == []
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_gamma_arrivals_run_and_are_reported(stress, plain_server):
    result = stress("--url", plain_server.url, "--start-rate", "100", "--max-rate", "115", "--arrivals", "gamma:2", *FAST)
    assert result.code == 0, result.err
    report = result.json()
    assert report["arrivals"] == "gamma:2"
    assert [s["rate"] for s in report["steps"]] == [100.0, 110.0]
    assert all(s["samples"] >= 100 and s["errors"] == 0 for s in report["steps"])


@pytest.mark.parametrize(
    "extra, path, stopped, check",
    [
        (["--slo-ms", "0.01"], "", "slo", lambda r: r["knee_rps"] is None and r["knee_crossed_slo"]),
        (["--max-requests", "130"], "", "max_requests", lambda r: r["requests"] == 130),
        (["--max-seconds", "2.5"], "", "max_seconds", lambda r: r["wall_seconds"] <= 2.6),
        ([], "/flaky/v1/embeddings", "error_rate", lambda r: r["error_kinds"].get("http_503", 0) > 0),
    ],
)
def test_stop_conditions(stress, plain_server, extra, path, stopped, check):
    result = stress("--url", plain_server.url + path, "--start-rate", "100", *FAST, *extra)
    assert result.code == 0, result.err
    report = result.json()
    assert report["stopped_because"] == stopped
    assert check(report), report


def test_table_output_and_text(stress, plain_server):
    result = stress("--url", plain_server.url, "--start-rate", "100", "--max-rate", "100", "--step-seconds", "1",
                    "--quiet", *NO_WARMUP)
    assert result.code == 0, result.err
    assert "offered rps" in result.out and "achieved rps" in result.out
    assert "stopped because: max_rate" in result.out and "generator CPU" in result.out


def test_fault_and_degradation_through_the_admin_api(stress, admin_server):
    result = stress(
        "--url", admin_server.url, "--start-rate", "60", "--step-percent", "0", "--max-seconds", "9", *NO_WARMUP,
        "--admin-token-file", str(admin_server.token_file),
        "--fault", "at=2s,latency_ms=60,seconds=1", "--degrade", "at=4s,precision=int8",
        "--fault", "at=1s,leak_mb=5", "--fault", "at=3.5s,cache_flush", "--degrade", "at=2.5s,warmup=10",
        "--degrade-window", "2", "--recovery-window", "1", "--fault-grace", "0", *FAST,
    )
    assert result.code == 0, result.err
    assert admin_server.token not in result.out + result.err  # never printed
    report = result.json()
    recovery = report["recoveries"][0]
    assert [r["fault"] for r in report["recoveries"]] == ["latency_ms=60 at=2s for 1s", "leak_mb=5 at=1s",
                                                           "cache_flush at=3.5s"]
    assert recovery["baseline_p99_ms"] < 60
    assert recovery["seconds"] is not None and recovery["seconds"] < 3
    degradation, warmup = report["degradations"]
    assert (degradation["action"], warmup["action"]) == ("precision=int8", "warmup top=10")
    assert degradation["p99_before_ms"] > 0 and degradation["p99_after_ms"] > 0
    # the fault's latency shows in the step that holds it
    assert max(s["p99_ms"] or 0 for s in report["steps"] if s["during_fault"]) >= 60
    calls = admin_server.admin_calls()
    assert ["/admin/faults", {"latency_ms": 60.0, "seconds": 1.0}] in calls
    assert ["/admin/precision", {"precision": "int8"}] in calls
    assert ["/admin/faults", {"leak_mb": 5}] in calls and ["/admin/faults", {"cache_flush": True}] in calls
    assert ["/admin/warmup", {"top": 10}] in calls
    # the preflight checked each endpoint first, with an empty body (a 400)
    assert calls[:3] == [["/admin/faults", {}], ["/admin/precision", {}], ["/admin/warmup", {}]]


def test_kill_a_local_server(stress, tmp_path):
    server = start_fake_server(tmp_path)
    try:
        result = stress("--url", server.url, "--start-rate", "50", "--step-percent", "0", "--max-seconds", "5",
                        "--kill-pid", str(server.proc.pid), "--fault", "at=1.5s,kill", "--recovery-window", "1",
                        *FAST)
        assert result.code == 0, result.err
        assert server.proc.wait(5) == -signal.SIGKILL
    finally:
        server.stop()
    report = result.json()
    assert report["error_kinds"].get("connection", 0) > 0
    (recovery,) = report["recoveries"]
    assert recovery["seconds"] is None and "not back" in recovery["note"]


BAD = [
    (["--url", "http://127.0.0.1:{free}"], "cannot reach http://127.0.0.1:{free}/v1/embeddings"),
    (["--url", "{plain}/plain/v1/embeddings"], "is not an OpenAI embeddings endpoint: its answer has no"),
    (["--url", "{plain}/other/v1/embeddings"], "is not an OpenAI embeddings endpoint: a test request got HTTP 404"),
    (["--url", "{plain}/healthz"], "is not an OpenAI endpoint: its path must end in"),
    (["--url", "not a url"], "must be an http:// or https:// URL"),
    (["--url", "{plain}", "--fault", "at=10s,slowdown"], "slowdown needs seconds="),
    (["--url", "{plain}", "--fault", "latency_ms=5,seconds=1"], "missing at=<time>"),
    (["--url", "{plain}", "--fault", "at=1s,fire"], "name exactly one fault kind"),
    (["--url", "http://10.0.0.5:8000", "--kill-pid", "4242", "--fault", "at=1s,kill"],
     "refusing to kill PID 4242: the target host 10.0.0.5 is not a loopback address"),
    (["--url", "{plain}", "--kill-pid", "4242"], "--kill-pid 4242 needs a kill time"),
    (["--url", "{plain}", "--start-rate", "0"], "--start-rate must be > 0"),
    (["--url", "{plain}", "--start-rate", "-5"], "--start-rate must be > 0"),
    (["--url", "{plain}", "--max-rate", "-1"], "--max-rate must be > 0"),
    (["--url", "{plain}", "--max-rate", "0"], "--max-rate must be > 0"),
    (["--url", "{plain}", "--step-percent", "-10"], "--step-percent must be >= 0"),
    (["--url", "{plain}", "--max-requests", "0"], "--max-requests must be >= 1"),
    (["--url", "{plain}", "--fault", "at=1s,cache_flush"], "need the admin token"),
    (["--url", "{plain}", "--degrade", "at=50s,warmup"], "ends after the load stops at 40s"),
    (["--url", "{plain}", "--fault", "at=45s,slowdown=2,seconds=5", "--admin-token-file", "/dev/null"],
     "plus a 5s recovery window is past the load's stop at 40s (--max-seconds minus the drain, the probe and the warm-up)"),
    (["--url", "{plain}", "--plot", "/nonexistent/dir/x.png"], "folder /nonexistent/dir does not exist"),
    (["--url", "{plain}", "--arrivals", "bursty"], "--arrivals must be one of poisson, uniform, gamma:CV, got 'bursty'"),
    (["--url", "{plain}", "--arrivals", "gamma:0"], "gap coefficient of variation in (0, 10], got 'gamma:0'"),
]


@pytest.mark.parametrize("args, message", BAD)
def test_bad_input_is_one_clear_line(stress, plain_server, free_port, args, message):
    fill = {"free": free_port, "plain": plain_server.url}
    result = stress(*[a.format(**fill) for a in args], "--quiet", "--max-seconds", "60", *NO_WARMUP)
    assert result.code != 0
    assert "Traceback" not in result.err and result.out == ""
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("forescale stress: error: ")
    assert message.format(**fill) in lines[0]


@pytest.mark.parametrize(
    "server_kwargs, token, message",
    [
        ({"token": "right"}, "wrong", "refused the token (HTTP 401)"),
        ({"token": "right", "faults": False}, "right", "switched off or missing (HTTP 404) (start the server with --enable-faults)"),
        ({}, "any", "switched off or missing (HTTP 404)"),
    ],
)
def test_admin_preflight_refusals(stress, tmp_path, monkeypatch, server_kwargs, token, message):
    server = start_fake_server(tmp_path, **server_kwargs)
    monkeypatch.setenv("FORESCALE_ADMIN_TOKEN", token)
    try:
        result = stress("--url", server.url, "--fault", "at=1s,cache_flush", "--quiet", "--max-seconds", "30", *NO_WARMUP)
    finally:
        server.stop()
    assert result.code != 0 and "Traceback" not in result.err
    assert message in result.err and token not in result.err
    assert len(result.err.strip().splitlines()) == 1
