"""Parsing of --fault and --degrade specs (forescale_stress.faults)."""

from __future__ import annotations

import pytest

from forescale_stress.errors import StressError
from forescale_stress.faults import parse_degrade, parse_duration, parse_fault


@pytest.mark.parametrize(
    "text, seconds",
    [("30", 30.0), ("30s", 30.0), ("1.5s", 1.5), ("500ms", 0.5), ("2m", 120.0), (" 4 s ", 4.0), (".5", 0.5)],
)
def test_durations(text, seconds):
    assert parse_duration(text, "x") == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "-3s", "abc", "3h", "1e3", "s"])
def test_bad_durations(text):
    with pytest.raises(StressError, match="is not a duration"):
        parse_duration(text, "at")


@pytest.mark.parametrize(
    "spec, kind, at, seconds, body",
    [
        ("at=30s,latency_ms=200,seconds=20", "latency_ms", 30, 20, {"latency_ms": 200.0, "seconds": 20.0}),
        ("at=60s,slowdown=2.5,seconds=30", "slowdown", 60, 30, {"slowdown": 2.5, "seconds": 30.0}),
        ("at=90s,cache_flush", "cache_flush", 90, 0, {"cache_flush": True}),
        ("cache_flush=true, at=1m", "cache_flush", 60, 0, {"cache_flush": True}),
        ("at=100,leak_mb=50", "leak_mb", 100, 0, {"leak_mb": 50}),
        ("at=500ms,kill,pid=4242", "kill", 0.5, 0, None),
        ("at=10s,kv_fragmentation=0.5", "kv_fragmentation", 10, 0, {"kv_fragmentation": 0.5}),
        ("at=10s,kv_fragmentation=0", "kv_fragmentation", 10, 0, {"kv_fragmentation": 0.0}),
        ("at=20s,memory_pressure=0.75,seconds=30", "memory_pressure", 20, 30, {"memory_pressure": 0.75, "seconds": 30.0}),
        ("at=60s,input_scale=4,seconds=2m", "input_scale", 60, 120, None),  # carried out by the load generator
    ],
)
def test_good_faults(spec, kind, at, seconds, body):
    fault = parse_fault(spec)
    assert (fault.kind, fault.at, fault.seconds, fault.admin_body()) == (kind, at, seconds, body)
    assert fault.end == at + seconds
    assert fault.label()


def test_kill_takes_the_pid_from_kill_pid_and_its_signal():
    fault = parse_fault("at=3s,kill,signal=term", kill_pid=777)
    assert (fault.pid, fault.signal) == (777, "term")
    assert parse_fault("at=3s,kill,pid=12", kill_pid=777).pid == 12


@pytest.mark.parametrize(
    "spec, message",
    [
        ("", "empty spec"),
        ("latency_ms=200,seconds=20", "missing at=<time>"),
        ("at=,cache_flush", "is not a duration"),
        ("at=soon,cache_flush", "'soon' is not a duration"),
        ("at=30s", "name exactly one fault kind"),
        ("at=30s,cache_flush,leak_mb=5", "name exactly one fault kind"),
        ("at=30s,explode", "name exactly one fault kind"),
        ("at=30s,latency_ms=200", "latency_ms needs seconds="),
        ("at=30s,latency_ms=-1,seconds=5", "latency_ms must be a positive number"),
        ("at=30s,latency_ms=abc,seconds=5", "latency_ms='abc' is not a number"),
        ("at=30s,latency_ms,seconds=5", "latency_ms needs a value"),
        ("at=30s,slowdown=0.5,seconds=5", "slowdown is a factor >= 1"),
        ("at=30s,slowdown=2,seconds=0", "seconds must be > 0"),
        ("at=30s,cache_flush,seconds=5", "seconds not allowed with cache_flush"),
        ("at=30s,cache_flush=maybe", "cache_flush is a flag"),
        ("at=30s,leak_mb=1.5", "leak_mb must be a whole number"),
        ("at=30s,kill", "kill needs a process"),
        ("at=30s,kill,pid=1", "pid must be a process id > 1"),
        ("at=30s,kill,pid=x", "pid must be a process id > 1"),
        ("at=30s,kill=9,pid=5", "kill is a flag"),
        ("at=30s,kill,pid=5,signal=hup", "signal must be one of kill, term"),
        ("at=1s,at=2s,cache_flush", "'at' given twice"),
        ("at=30s,explode", "'explode' is not a fault kind"),
        ("at=30s,kv_fragmentation=nan", "kv_fragmentation must be a finite number, got nan"),
        ("at=30s,kv_fragmentation=-0.5", "kv_fragmentation is the share of the KV pool to leak, 0 to 1"),
        ("at=30s,kv_fragmentation=2", "kv_fragmentation is the share of the KV pool to leak, 0 to 1"),
        ("at=30s,kv_fragmentation=0.5,seconds=3", "seconds not allowed with kv_fragmentation"),
        ("at=30s,memory_pressure=0.5", "memory_pressure needs seconds="),
        ("at=30s,memory_pressure=nan,seconds=5", "memory_pressure must be a positive number, got nan"),
        ("at=30s,memory_pressure=-1,seconds=5", "memory_pressure must be a positive number"),
        ("at=30s,memory_pressure=1.5,seconds=5", "memory_pressure is the share of the device's room held"),
        ("at=30s,input_scale=inf,seconds=5", "input_scale must be a positive number, got inf"),
        ("at=30s,input_scale=0,seconds=5", "input_scale must be a positive number"),
        ("at=30s,input_scale=100,seconds=5", r"input_scale must be a number in \(0, 64\], got 100"),
        ("at=30s,input_scale=4", "input_scale needs seconds="),
        ("at=1s,,cache_flush", "empty item between commas"),
    ],
)
def test_bad_faults(spec, message):
    with pytest.raises(StressError, match=message):
        parse_fault(spec)


@pytest.mark.parametrize(
    "spec, action, at, path, body",
    [
        ("at=60s,precision=int8", "precision", 60, "/admin/precision", {"precision": "int8"}),
        ("at=60s,precision=FP16", "precision", 60, "/admin/precision", {"precision": "fp16"}),
        ("at=5s,warmup", "warmup", 5, "/admin/warmup", {"top": 100}),
        ("warmup=25,at=5s", "warmup", 5, "/admin/warmup", {"top": 25}),
    ],
)
def test_good_degradations(spec, action, at, path, body):
    d = parse_degrade(spec)
    assert (d.action, d.at, d.admin_path(), d.admin_body()) == (action, at, path, body)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("precision=int8", "missing at="),
        ("at=5s,precision=int4", "precision must be one of fp32, fp16, bf16, int8"),
        ("at=5s,warmup=0", "warmup=N needs a whole number >= 1"),
        ("at=5s", "name exactly one action"),
        ("at=5s,warmup,precision=int8", "name exactly one action"),
        ("at=5s,reboot", "name exactly one action"),
    ],
)
def test_bad_degradations(spec, message):
    with pytest.raises(StressError, match=message):
        parse_degrade(spec)
