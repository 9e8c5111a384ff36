"""The one process-level scenario of the campaigns (~2.5-3.5 min): the whole stack (emulated API server, pod runner,
real Prometheus, real operator, emulated-GPU model servers) with a known admin token.

- Fault: a model-server pod of pool A is SIGKILLed as the operator switches
  the pool to int8. Expected: the operator does not crash, reports the admin
  result in PrecisionDowngraded, and the restarted server gets the runtime
  precision (int8) once it is ready again.
- Security: the admin token appears nowhere in the operator's log, the
  events, the status or the incident snapshot ConfigMaps.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import urllib.request
from pathlib import Path

import pytest

from forescale_devcluster.arrivals import RateProfile
from forescale_devcluster.demo_scenario import DemoSettings, demo_resource
from forescale_devcluster.demo_stack import DemoStack, StackSettings, prometheus_available, wait_until
from forescale_devcluster.loadgen import LoadGenerator

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(480),
    pytest.mark.skipif(not prometheus_available(), reason="needs Prometheus: apt-get install -y prometheus (make test does)"),
]

NAME = "chat"
TOKEN = "campaign-token-7d41c9e2b8a0f356"


def _reasons(stack):
    return [e.get("reason") for e in stack.events(NAME)]


def _server_pid(url: str) -> int:
    """The PID of the `forescale serve` process listening on the pod's port (the pod runner's child)."""
    port = url.rsplit(":", 1)[1].strip("/")
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in args and b"--port" in args and args[args.index(b"--port") + 1] == port.encode():
            return int(proc.name)
    raise AssertionError(f"no server process on port {port}")


def _precision(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url + "/readyz", timeout=2) as resp:  # noqa: S310 - loopback only
            return json.loads(resp.read()).get("precision")
    except OSError:
        return None


def test_pod_killed_during_a_precision_switch_and_the_token_never_leaks(tmp_path, tally):
    settings = DemoSettings(step_seconds=2, cutback_interval_seconds=60, cutback_stable_seconds=60, startup_seconds=2.0)
    with DemoStack(StackSettings(startup_seconds=2.0, scrape_seconds=1.0, workdir=str(tmp_path), admin_token=TOKEN)) as stack:
        resource = demo_resource(settings, stack.settings.namespace)
        min_a = resource["spec"]["pools"]["a"]["minReplicas"]
        stack.apply(resource)
        wait_until(lambda: len(stack.pod_urls(NAME, "a")) >= 2, 90, 1.0, "pool a's two pods")
        stack.start_gateway(NAME)
        gen = LoadGenerator(stack.gateway_url, RateProfile((14.0,), 240, "constant"), duration_seconds=240, seed=1,
                            max_concurrency=128, timeout_seconds=8.0)
        load = threading.Thread(target=lambda: asyncio.run(gen.run()), daemon=True)
        load.start()
        try:
            with tally.attempt("model-server pod killed during a precision switch"):
                wait_until(lambda: (stack.infd(NAME) or {}).get("status", {}).get("forecast"), 60, 1.0, "a first forecast")
                urls = stack.pod_urls(NAME, "a")
                for url in urls:
                    stack.admin(url, "/admin/faults", {"slowdown": 2.5, "seconds": 60})
                wait_until(lambda: "TrafficShifted" in _reasons(stack), 60, 0.1, "the incident's traffic shift")
                victim = urls[0]
                os.kill(_server_pid(victim), signal.SIGKILL)  # the switch to int8 follows the shift in the same tick

                wait_until(lambda: "PrecisionDowngraded" in _reasons(stack), 30, 0.5, "PrecisionDowngraded")
                message = next(e["message"] for e in stack.events(NAME) if e["reason"] == "PrecisionDowngraded")
                assert "pods" in message, message  # the admin result is reported ("1/2 pods; ...", "2/2 pods")
                # The restarted server comes back at its template precision; the operator must switch it too.
                wait_until(lambda: _precision(victim) == "int8", 60, 0.5, f"{victim} back at the runtime precision int8")
                # A may be scaling up meanwhile: a pod that has just become ready starts at fp16 and is switched
                # at the next tick (the runtime precision is re-applied whenever A's ready pods grow).
                wait_until(lambda: all(_precision(u) == "int8" for u in stack.pod_urls(NAME, "a")), 30, 0.5,
                           "every ready pod of a at int8")
                assert stack._procs["operator"].poll() is None  # never a crash
                assert _reasons(stack).count("EmergencyStarted") == 1

            with tally.attempt("model-server pod killed after its precision switch"):
                # The same pod again, now that the operator has switched it: its restart keeps the pod's name.
                # Not while A scales down after the relief: a ReplicaSet removes a pod that is not ready first, so
                # the restarting victim would be deleted, not restarted (a slow CI machine once killed it just as
                # A went from 8 pods to 5). Once recovered and at its minimum, A only grows until the cut-back's
                # last step restores fp16 (two cut-back intervals away), and A keeps int8 until then.
                wait_until(lambda: "Recovered" in _reasons(stack), 150, 1.0, "the incident's recovery")
                wait_until(lambda: len(stack.pod_urls(NAME, "a")) == min_a and victim in stack.pod_urls(NAME, "a"),
                           60, 0.5, f"pool a back at its {min_a} pods, {victim} among them")
                assert _precision(victim) == "int8"
                os.kill(_server_pid(victim), signal.SIGKILL)
                wait_until(lambda: _precision(victim) is None, 10, 0.2, f"{victim} down")
                wait_until(lambda: _precision(victim) == "int8", 60, 0.5, f"{victim} restarted and back at int8")
                assert stack._procs["operator"].poll() is None
                assert stack._procs["operator"].poll() is None

            with tally.attempt("admin token absent from logs, events, status, snapshots"):
                wait_until(lambda: any(c["metadata"]["name"].startswith(f"{NAME}-incident-")
                                       for c in stack.list("v1", "configmaps")), 30, 0.5, "the incident snapshot")
                places = {
                    "operator log": stack.log("operator").read_text(errors="replace"),
                    "events": json.dumps(stack.events(NAME)),
                    "status": json.dumps(stack.infd(NAME).get("status")),
                    "snapshots": json.dumps([c for c in stack.list("v1", "configmaps")
                                             if c["metadata"]["name"].startswith(f"{NAME}-incident-")]),
                }
                assert all(places.values())  # each place has content to search
                leaked = [where for where, text in places.items() if TOKEN in text]
                assert not leaked, f"the admin token appears in: {', '.join(leaked)}"
        finally:
            gen.stop()
            load.join(timeout=30)
