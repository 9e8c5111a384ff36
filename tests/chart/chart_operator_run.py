"""Run the real operator against the emulated API server and record what it did.

Used by the chart tests that check the chart against the running operator: the
requests it makes (RBAC) and the endpoints the Deployment points at (liveness
probe, metrics port). Two scenes:
- "incident": Prometheus reports p99 900 ms against a 200 ms SLO, so the
  playbook runs (traffic shift, admin calls with the token Secret, pods read,
  snapshot ConfigMap);
- "prometheus-down": nothing answers at the Prometheus URL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml
from forescale_devcluster.procs import free_port

from chart_fake_prometheus import start_fake_prometheus
from chart_tools import REPO
from rbac_rules import ApiCall, call_from_record

EXAMPLE = REPO / "crds" / "examples" / "minimal.yaml"
ADMIN_SECRET = "forescale-admin"
#: the Secret the chart's default install makes in its release namespace, copied by the operator
CHART_TOKEN = "forescale-admin-token"
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
    #: the Deployments, Services and routes left once the resource was deleted, by `plural/name`
    left: dict[str, dict]


def _wait_for(predicate, timeout: float, what: str, log_path: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    # The operator's own log says why (a Lease not taken, a converge retried, kopf's peering paused): a CI
    # failure must be explainable from its output alone.
    tail = f"; the operator's log ends:\n{log_path.read_text()[-4000:]}" if log_path and log_path.exists() else ""
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}{tail}")


def _http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return 0, ""


def run_operator(apiserver, args: list[str], workdir: Path, scene: str, example: Path = EXAMPLE,
                 token_home: str | None = None) -> OperatorRun:
    """Start the emulated API server and `forescale operator ARGS` in a scene; converge, scrape, delete, stop.

    `example` may hold the workload a resource adopts before the resource itself (crds/examples/adopt.yaml):
    every object is applied, the resource in Auto. The admin token is the user's Secret ADMIN_SECRET in the
    resource's namespace, or, given `token_home` (the release namespace), the chart's default: CHART_TOKEN
    there, copied by the operator (FORESCALE_ADMIN_TOKEN_COPY_FROM)."""
    objects = [doc for doc in yaml.safe_load_all(example.read_text()) if doc]
    resource = next(doc for doc in objects if doc["kind"] == "InferenceDeployment")
    resource["spec"]["mode"] = "Auto"
    # One loop tick a second (the minimum), so the playbook runs within seconds.
    resource["spec"].setdefault("forecast", {})["stepSeconds"] = 1
    namespace, name = resource["metadata"]["namespace"], resource["metadata"]["name"]
    handle = apiserver.start_apiserver(REPO / "crds", kubeconfig_path=workdir / "kubeconfig",
                                       namespaces=(namespace,) + ((token_home,) if token_home else ()),
                                       ready_deployments=True)
    prometheus = start_fake_prometheus(name) if scene == "incident" else None
    prometheus_url = (f"http://127.0.0.1:{prometheus.server_address[1]}" if prometheus
                      else f"http://127.0.0.1:{free_port()}")  # nothing listens there
    log_path = workdir / "operator.log"
    metrics_port, health_port = free_port(), free_port()
    operator = None
    try:
        # Direct writes, not HTTP requests: not in the request log.
        for obj in objects:
            handle.put(obj)
        secret = CHART_TOKEN if token_home else ADMIN_SECRET
        handle.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret, "namespace": token_home or namespace},
                    "data": {"token": "Y2hhcnQtdGVzdA=="}})
        env = dict(
            os.environ,
            KUBECONFIG=str(handle.kubeconfig_path),
            FORESCALE_METRICS_PORT=str(metrics_port),
            FORESCALE_HEALTH_PORT=str(health_port),
            FORESCALE_ADMIN_TOKEN_SECRET=f"{secret}/token",
            FORESCALE_ADMIN_TOKEN_COPY_FROM=token_home or "",
            FORESCALE_PROMETHEUS_URL=prometheus_url,
            POD_NAME="forescale-chart-test",
        )
        forescale = Path(sys.executable).with_name("forescale")
        with log_path.open("w") as out:
            operator = subprocess.Popen([str(forescale), "operator", *args], env=env, stdout=out, stderr=subprocess.STDOUT)

        def alive() -> None:
            assert operator.poll() is None, f"the operator exited early:\n{log_path.read_text()[-3000:]}"

        def converged() -> bool:
            # A phase past Pending, not Ready=True: with Prometheus down, Ready is True for about a second
            # (from converge to the first tick, whose engine says Degraded), and a poll on a slow CI machine
            # missed that second (a 90 s timeout in CI's namespaced run).
            alive()
            status = (handle.get("inferencedeployments", namespace, name) or {}).get("status") or {}
            return status.get("phase") not in (None, "Pending")

        def snapshot_saved() -> bool:
            alive()
            return any(cm["metadata"]["name"].startswith(f"{name}-incident-") for cm in handle.objects("configmaps", namespace))

        _wait_for(converged, 90, "the operator to create the children", log_path)
        if scene == "incident":
            _wait_for(snapshot_saved, 90, "the playbook to save its snapshot", log_path)
        else:
            time.sleep(3)  # a few loop ticks
        health_status, _ = _http_get(f"http://127.0.0.1:{health_port}/healthz")
        _, metrics_text = _http_get(f"http://127.0.0.1:{metrics_port}/metrics")

        url = f"{handle.url}/apis/forescale.io/v1alpha1/namespaces/{namespace}/inferencedeployments/{name}"
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=10).close()
        _wait_for(lambda: handle.get("inferencedeployments", namespace, name) is None, 30,
                  "the operator to release its finalizer", log_path)
        left = {f"{plural}/{obj['metadata']['name']}": obj for plural in ("deployments", "services", "httproutes")
                for obj in handle.objects(plural, namespace)}
    finally:
        if operator is not None and operator.poll() is None:
            operator.terminate()
            try:
                operator.wait(20)
            except subprocess.TimeoutExpired:
                operator.kill()
        records = handle.request_log.records()
        handle.stop()
        if prometheus is not None:
            prometheus.shutdown()
    own = [r for r in records if (r.verb, r.api_group, r.resource, r.subresource) == HARNESS_DELETE]
    return OperatorRun(
        calls=[call_from_record(r) for r in records if r not in own],
        harness_deletes=len(own),
        health_status=health_status,
        metrics_text=metrics_text,
        log=log_path.read_text(),
        left=left,
    )
