"""The chart's RBAC against the API calls the real operator makes.

The real operator (`forescale operator`, kopf over HTTP) runs against the
emulated API server (forescale_devcluster), creates and converges the
children of crds/examples/minimal.yaml, then handles its deletion. Every
request it made is taken from the server's request log and must be allowed
by the rendered Role/ClusterRole, in cluster mode (-A) and namespaced mode (-n).

What this run cannot reach (an incident: snapshots, admin calls, pods,
secrets) is covered by the declared needs in test_chart_rbac.py.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from chart_tools import NAMESPACE, REPO, render
from rbac_rules import ApiCall, call_from_record, denied_calls, load_grants

apiserver = pytest.importorskip("forescale_devcluster.apiserver", reason="the emulated API server is not installed")

EXAMPLE = REPO / "crds" / "examples" / "minimal.yaml"
ADMIN_SECRET = "forescale-admin"
# The test's own request, not the operator's: it deletes the resource to drive the finalizer path.
TEST_DELETE = ("delete", "forescale.io", "inferencedeployments", "")


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


def _record_operator_calls(args: list[str], tmp_path: Path) -> list[ApiCall]:
    resource = yaml.safe_load(EXAMPLE.read_text())
    namespace = resource["metadata"]["namespace"]
    handle = apiserver.start_apiserver(REPO / "crds", kubeconfig_path=tmp_path / "kubeconfig", namespaces=(namespace,))
    log = tmp_path / "operator.log"
    operator = None
    try:
        handle.put(resource)  # not an HTTP request: not in the log
        env = dict(
            os.environ,
            KUBECONFIG=str(handle.kubeconfig_path),
            FORESCALE_METRICS_PORT=str(_free_port()),
            FORESCALE_HEALTH_PORT=str(_free_port()),
            FORESCALE_ADMIN_TOKEN_SECRET=f"{ADMIN_SECRET}/token",
            POD_NAME="forescale-rbac-test",
        )
        env.pop("FORESCALE_PROMETHEUS_URL", None)
        forescale = Path(sys.executable).with_name("forescale")
        with log.open("w") as out:
            operator = subprocess.Popen([str(forescale), "operator", *args], env=env, stdout=out, stderr=subprocess.STDOUT)

        def converged() -> bool:
            assert operator.poll() is None, f"the operator exited early:\n{log.read_text()[-3000:]}"
            return handle.get("httproutes", namespace, resource["metadata"]["name"]) is not None
        _wait_for(converged, 90, "the operator to create the children")

        url = f"{handle.url}/apis/forescale.io/v1alpha1/namespaces/{namespace}/inferencedeployments/{resource['metadata']['name']}"
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=10).close()
        _wait_for(lambda: handle.get("inferencedeployments", namespace, resource["metadata"]["name"]) is None, 30,
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
    own = [r for r in records if (r.verb, r.api_group, r.resource, r.subresource) == TEST_DELETE]
    assert len(own) == 1, "the operator must never delete InferenceDeployments itself"
    return [call_from_record(r) for r in records if r not in own]


@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    ("args", "values"),
    [
        (["-A"], {}),
        (["-n", "default"], {"operator.namespaces": "{default}"}),
    ],
    ids=["cluster", "namespaced"],
)
def test_every_call_the_operator_makes_is_allowed(args, values, tmp_path):
    calls = _record_operator_calls(args, tmp_path)
    used = {(c.group, c.full_resource, c.verb) for c in calls}
    # The run must have done real work, or an empty log would pass.
    assert {("apps", "deployments", "create"), ("forescale.io", "inferencedeployments/status", "patch"),
            ("forescale.io", "inferencedeployments", "watch")} <= used
    manifests = render(set_values={"operator.adminTokenSecret.name": ADMIN_SECRET, **values})
    grants = load_grants(manifests, "forescale", NAMESPACE)
    denied = denied_calls(grants, calls)
    assert denied == [], f"the chart's RBAC would deny these calls of the operator: {denied}"
