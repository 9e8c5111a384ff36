"""Preview with targetRefs, through the real operator (kopf over HTTP): from create to delete, the API
server's request log shows no write but to the resource itself, its events, kopf's peering object and the
namespace's coordination Lease. The adopted Deployment has no admin token: one AdminTokenMissing Warning
says so, and AdminReady is False.

A stand-in Prometheus reports the service in trouble (p99 900 ms at 100 req/s against a 200 ms SLO), so
the loop has something to say: the events tell what Auto would do to the Deployment that runs now.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from operator_harness import wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "chart"))

from chart_fake_prometheus import start_fake_prometheus  # noqa: E402

ADOPT = Path(__file__).resolve().parents[2] / "crds" / "examples" / "adopt.yaml"
WRITES = ("create", "update", "patch", "delete", "deletecollection")
#: what Preview may write: the resource (kopf's finalizer and annotations, status), its events, kopf's peering
#: and the namespace's coordination Lease (forescale_operator.leases)
OWN = {"inferencedeployments", "events", "clusterkopfpeerings", "leases"}


def test_preview_writes_nothing_of_the_users_from_create_to_delete(cluster, start_operator):
    prometheus = start_fake_prometheus("embed")
    try:
        objects = [doc for doc in yaml.safe_load_all(ADOPT.read_text()) if doc]
        resource = next(o for o in objects if o["kind"] == "InferenceDeployment")
        resource["spec"]["forecast"] = {"stepSeconds": 1}
        # The operator's admin token: the adopted Deployment does not mount it, and Preview must say so (and only read).
        objects.insert(0, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "forescale-admin-token",
                                                                              "namespace": "default"},
                           "data": {"token": "czNjcmV0"}})
        for obj in objects:
            cluster.put(obj)  # direct: not in the request log
        before = {p: cluster.get(p, "default", "embed") for p in ("deployments", "services", "httproutes")}
        operator = start_operator(FORESCALE_PROMETHEUS_URL=f"http://127.0.0.1:{prometheus.server_address[1]}",
                                  FORESCALE_ADMIN_TOKEN_SECRET="forescale-admin-token/token")

        def messages() -> list[str]:
            return [e["message"] for e in cluster.objects("events", "default") if e["involvedObject"]["name"] == "embed"]

        wait_until(lambda: any(m.startswith("Preview: would scale embed up") for m in messages()), 60,
                   "a Preview scaling event for the Deployment embed", operator)
        assert any(m.startswith("Preview: would adopt Deployment embed as pool a") for m in messages())
        missing = [e for e in cluster.objects("events", "default") if e["reason"] == "AdminTokenMissing"]
        assert len(missing) == 1 and missing[0]["type"] == "Warning", missing
        assert missing[0]["message"].startswith("pool a (Deployment embed): container server sets neither")
        admin = next(c for c in cluster.get("inferencedeployments", "default", "embed")["status"]["conditions"]
                     if c["type"] == "AdminReady")
        assert (admin["status"], admin["reason"]) == ("False", "TokenMissing")
        cluster.delete("inferencedeployments", "default", "embed")
        wait_until(lambda: cluster.get("inferencedeployments", "default", "embed") is None, 30,
                   "kopf to release the resource", operator)
        assert "released: no route of the user's changed; Deployment embed left as it is" in operator.log
    finally:
        prometheus.shutdown()
    writes = [r for r in cluster.request_log if r.verb in WRITES]
    assert writes and {r.resource for r in writes} <= OWN, sorted({(r.verb, r.resource, r.name) for r in writes})
    assert {p: cluster.get(p, "default", "embed") for p in before} == before
    assert cluster.get("deployments", "default", "embed-b") is None
