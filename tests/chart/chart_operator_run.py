"""Run the real operator against the emulated API server and record what it did.

Used by the chart tests that check the chart against the running operator: the
requests it makes (RBAC) and the endpoints the Deployment points at (liveness
probe, metrics port).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from chart_tools import REPO
from rbac_rules import ApiCall, call_from_record

EXAMPLE = REPO / "crds" / "examples" / "minimal.yaml"
ADMIN_SECRET = "forescale-admin"
# The harness's own request, not the operator's: it deletes the resource to drive the finalizer path.
HARNESS_DELETE = ("delete", "forescale.io", "inferencedeployments", "")


@dataclass
class OperatorRun:
    """What one run of the operator showed."""

    calls: list[ApiCall]
    harness_deletes: int
    health_status: int
    metrics_text: str
    log: str


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


def _http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return 0, ""


def run_operator(apiserver, args: list[str], workdir: Path, settle_seconds: float = 3.0) -> OperatorRun:
    """Start the emulated API server and `forescale operator ARGS`; converge, scrape, delete, stop."""
    resource = yaml.safe_load(EXAMPLE.read_text())
    namespace, name = resource["metadata"]["namespace"], resource["metadata"]["name"]
    handle = apiserver.start_apiserver(REPO / "crds", kubeconfig_path=workdir / "kubeconfig", namespaces=(namespace,))
    log_path = workdir / "operator.log"
    metrics_port, health_port = _free_port(), _free_port()
    operator = None
    try:
        handle.put(resource)  # not an HTTP request: not in the request log
        env = dict(
            os.environ,
            KUBECONFIG=str(handle.kubeconfig_path),
            FORESCALE_METRICS_PORT=str(metrics_port),
            FORESCALE_HEALTH_PORT=str(health_port),
            FORESCALE_ADMIN_TOKEN_SECRET=f"{ADMIN_SECRET}/token",
            POD_NAME="forescale-chart-test",
            # A Prometheus that is down (nothing listens there): the case ForescaleMetricsUnavailable is for.
            FORESCALE_PROMETHEUS_URL=f"http://127.0.0.1:{_free_port()}",
        )
        forescale = Path(sys.executable).with_name("forescale")
        with log_path.open("w") as out:
            operator = subprocess.Popen([str(forescale), "operator", *args], env=env, stdout=out, stderr=subprocess.STDOUT)

        def converged() -> bool:
            assert operator.poll() is None, f"the operator exited early:\n{log_path.read_text()[-3000:]}"
            return handle.get("httproutes", namespace, name) is not None

        _wait_for(converged, 90, "the operator to create the children")
        time.sleep(settle_seconds)  # a loop tick or two, so its metrics are set
        health_status, _ = _http_get(f"http://127.0.0.1:{health_port}/healthz")
        _, metrics_text = _http_get(f"http://127.0.0.1:{metrics_port}/metrics")

        url = f"{handle.url}/apis/forescale.io/v1alpha1/namespaces/{namespace}/inferencedeployments/{name}"
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=10).close()
        _wait_for(lambda: handle.get("inferencedeployments", namespace, name) is None, 30,
                  "the operator to release its finalizer")
    finally:
        if operator is not None and operator.poll() is None:
            operator.terminate()
            try:
                operator.wait(20)
            except subprocess.TimeoutExpired:
                operator.kill()
        records = handle.request_log.records()
        handle.stop()
    own = [r for r in records if (r.verb, r.api_group, r.resource, r.subresource) == HARNESS_DELETE]
    return OperatorRun(
        calls=[call_from_record(r) for r in records if r not in own],
        harness_deletes=len(own),
        health_status=health_status,
        metrics_text=metrics_text,
        log=log_path.read_text(),
    )
