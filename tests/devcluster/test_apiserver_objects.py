"""Object semantics of the emulated API server, over real HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
INFDS = "/apis/forescale.io/v1alpha1/namespaces/default/inferencedeployments"
EVENTS = "/api/v1/namespaces/default/events"


def deployment(name: str, labels: dict | None = None, **spec) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
                         {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}, **spec}}


def infd(name: str = "chat") -> dict:
    body = yaml.safe_load((Path(__file__).parents[2] / "crds" / "examples" / "minimal.yaml").read_text())
    body["metadata"] = {"name": name}
    return {**body, "status": {"phase": "Stable"}}


def test_create_answers_201_with_uid_resource_version_and_generation(http):
    response = http.post(DEPLOYMENTS, json=deployment("a"))
    assert response.status_code == 201
    meta = response.json()["metadata"]
    assert meta["uid"] and meta["namespace"] == "default" and meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0 and meta["creationTimestamp"].endswith("Z")
    # The int GPU limit is kept as written.
    assert response.json()["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1


def test_duplicate_create_answers_409_already_exists(http):
    assert http.post(DEPLOYMENTS, json=deployment("a")).status_code == 201
    response = http.post(DEPLOYMENTS, json=deployment("a"))
    assert response.status_code == 409
    assert response.json()["reason"] == "AlreadyExists" and response.json()["kind"] == "Status"


def test_generate_name_gives_distinct_names(http):
    body = {"metadata": {"generateName": "chat."}, "reason": "PoolsCreated", "message": "m",
            "involvedObject": {"kind": "InferenceDeployment", "name": "chat", "namespace": "default"}}
    first, second = http.post(EVENTS, json=body), http.post(EVENTS, json=body)
    assert (first.status_code, second.status_code) == (201, 201)
    names = {first.json()["metadata"]["name"], second.json()["metadata"]["name"]}
    assert len(names) == 2 and all(n.startswith("chat.") for n in names)


def test_create_without_name_is_rejected_with_422(http):
    response = http.post(DEPLOYMENTS, json={"metadata": {}, "spec": {}})
    assert response.status_code == 422 and "generateName" in response.json()["message"]


@pytest.mark.parametrize("body, code", [("not json{", 400), ("[1, 2]", 400)])
def test_bad_bodies_answer_400(http, body, code):
    response = http.post(DEPLOYMENTS, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == code and response.json()["kind"] == "Status"


def test_list_has_list_kind_and_honours_label_selectors(http):
    http.post(DEPLOYMENTS, json=deployment("a", {"pool": "a", "app": "x"}))
    http.post(DEPLOYMENTS, json=deployment("b", {"pool": "b", "app": "x"}))
    http.post("/apis/apps/v1/namespaces/other/deployments", json=deployment("c", {"pool": "a"}))
    listed = http.get(DEPLOYMENTS).json()
    assert listed["kind"] == "DeploymentList" and [i["metadata"]["name"] for i in listed["items"]] == ["a", "b"]
    picked = http.get(DEPLOYMENTS, params={"labelSelector": "pool=a,app=x"}).json()["items"]
    assert [i["metadata"]["name"] for i in picked] == ["a"]
    everywhere = http.get("/apis/apps/v1/deployments", params={"labelSelector": "pool in (a)"}).json()["items"]
    assert sorted(i["metadata"]["name"] for i in everywhere) == ["a", "c"]


def test_generation_moves_on_spec_changes_only(http):
    http.post(DEPLOYMENTS, json=deployment("a"))
    merge = {"Content-Type": "application/merge-patch+json"}
    labelled = http.patch(f"{DEPLOYMENTS}/a", json={"metadata": {"labels": {"x": "y"}}}, headers=merge).json()
    assert labelled["metadata"]["generation"] == 1
    scaled = http.patch(f"{DEPLOYMENTS}/a", json={"spec": {"replicas": 3}}, headers=merge).json()
    assert scaled["metadata"]["generation"] == 2
    assert int(scaled["metadata"]["resourceVersion"]) > int(labelled["metadata"]["resourceVersion"])


def test_status_subresource_is_kept_apart_from_spec(http):
    created = http.post(INFDS, json=infd()).json()
    assert "status" not in created  # status on create is dropped, as for any CRD with the subresource
    merge = {"Content-Type": "application/merge-patch+json"}
    on_main = http.patch(f"{INFDS}/chat", json={"status": {"phase": "Emergency"}, "spec": {"mode": "Preview"}},
                         headers=merge).json()
    assert "status" not in on_main and on_main["spec"]["mode"] == "Preview"
    on_status = http.patch(f"{INFDS}/chat/status", json={"status": {"phase": "Stable"}, "spec": {"mode": "Auto"}},
                           headers=merge).json()
    assert on_status["status"] == {"phase": "Stable"} and on_status["spec"]["mode"] == "Preview"
    assert on_status["spec"]["forecast"]["stepSeconds"] == 15  # defaulted from the CRD's schema
    assert on_status["metadata"]["generation"] == on_main["metadata"]["generation"]


def test_replace_with_a_stale_resource_version_answers_409(http):
    created = http.post(DEPLOYMENTS, json=deployment("a")).json()
    http.patch(f"{DEPLOYMENTS}/a", json={"spec": {"replicas": 2}}, headers={"Content-Type": "application/merge-patch+json"})
    response = http.put(f"{DEPLOYMENTS}/a", json=created)
    assert response.status_code == 409 and response.json()["reason"] == "Conflict"


LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


def test_leases_are_created_read_and_updated_with_resource_version_conflicts(http):
    """What leader election needs (forescale_operator.leases): create once, read, update only from the
    version read: the second of two writers of the same version gets a 409, and neither change is lost silently."""
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "forescale-operator"},
            "spec": {"holderIdentity": "op-a", "leaseDurationSeconds": 30,
                     "renewTime": "2026-01-01T00:00:00.000000Z", "leaseTransitions": 0}}
    created = http.post(LEASES, json=body)
    assert created.status_code == 201
    assert http.post(LEASES, json=body).json()["reason"] == "AlreadyExists"
    read = http.get(f"{LEASES}/forescale-operator").json()
    assert read["spec"]["holderIdentity"] == "op-a"
    first = {**read, "spec": {**read["spec"], "holderIdentity": "op-b", "leaseTransitions": 1}}
    second = {**read, "spec": {**read["spec"], "holderIdentity": "op-c", "leaseTransitions": 1}}
    won = http.put(f"{LEASES}/forescale-operator", json=first)
    assert won.status_code == 200
    assert int(won.json()["metadata"]["resourceVersion"]) > int(read["metadata"]["resourceVersion"])
    lost = http.put(f"{LEASES}/forescale-operator", json=second)
    assert lost.status_code == 409 and lost.json()["reason"] == "Conflict"
    assert http.get(f"{LEASES}/forescale-operator").json()["spec"]["holderIdentity"] == "op-b"


def test_json_patch_and_scale_subresource(http):
    http.post(DEPLOYMENTS, json=deployment("a"))
    patched = http.patch(f"{DEPLOYMENTS}/a", json=[{"op": "replace", "path": "/spec/replicas", "value": 4}],
                         headers={"Content-Type": "application/json-patch+json"}).json()
    assert patched["spec"]["replicas"] == 4
    assert http.get(f"{DEPLOYMENTS}/a/scale").json()["spec"]["replicas"] == 4
    http.patch(f"{DEPLOYMENTS}/a/scale", json={"spec": {"replicas": 6}}, headers={"Content-Type": "application/merge-patch+json"})
    assert http.get(f"{DEPLOYMENTS}/a").json()["spec"]["replicas"] == 6


def test_delete_waits_for_finalizers_then_removes(http):
    http.post(DEPLOYMENTS, json={**deployment("a"), "metadata": {"name": "a", "finalizers": ["x/y"]}})
    marked = http.delete(f"{DEPLOYMENTS}/a").json()
    assert marked["metadata"]["deletionTimestamp"]
    assert http.get(f"{DEPLOYMENTS}/a").status_code == 200
    http.patch(f"{DEPLOYMENTS}/a", json={"metadata": {"finalizers": None}}, headers={"Content-Type": "application/merge-patch+json"})
    assert http.get(f"{DEPLOYMENTS}/a").status_code == 404


def test_garbage_collection_follows_owner_references(http):
    owner = http.post(INFDS, json=infd()).json()
    ref = {"apiVersion": "forescale.io/v1alpha1", "kind": "InferenceDeployment", "name": "chat",
           "uid": owner["metadata"]["uid"], "controller": True}
    child = deployment("chat-a")
    child["metadata"]["ownerReferences"] = [ref]
    http.post(DEPLOYMENTS, json=child)
    http.post(DEPLOYMENTS, json=deployment("unrelated"))
    assert http.delete(f"{INFDS}/chat").status_code == 200
    assert [i["metadata"]["name"] for i in http.get(DEPLOYMENTS).json()["items"]] == ["unrelated"]


def test_get_missing_object_answers_404_status(http):
    response = http.get(f"{DEPLOYMENTS}/nope")
    assert response.status_code == 404 and response.json()["reason"] == "NotFound"


def test_protobuf_bodies_are_refused_with_415(http):
    response = http.post(DEPLOYMENTS, content=b"\x00\x01", headers={"Content-Type": "application/vnd.kubernetes.protobuf"})
    assert response.status_code == 415


@pytest.mark.parametrize("change, message", [
    ({"slo": {"targetLatencyMs": 200, "quantile": 1.5}}, "spec.slo.quantile: 1.5 is greater than the maximum of 0.9999"),
    ({"pools": {"a": {"minReplicas": 5, "maxReplicas": 2, "template": {}}, "b": {"template": {}}}},
     "spec.pools.a.maxReplicas: pools.a.minReplicas must be <= maxReplicas"),
    ({"traffic": {"router": "linkerd"}}, "spec.traffic.router: 'linkerd' is not one of"),
    ({"traffic": {"router": "gatewayapi", "parentRefs": []}}, "router gatewayapi needs at least one parentRef"),
])
def test_custom_resources_breaking_the_crd_are_rejected_with_422(http, change, message):
    body = infd()
    body["spec"].update(change)
    response = http.post(INFDS, json=body)
    assert response.status_code == 422 and message in response.json()["message"]


def test_handle_delete_honours_finalizers(apiserver, http):
    http.post(DEPLOYMENTS, json={**deployment("a"), "metadata": {"name": "a", "finalizers": ["x/y"]}})
    assert apiserver.delete("deployments", "default", "a")["metadata"]["deletionTimestamp"]
    with pytest.raises(Exception, match="not found"):
        apiserver.delete("deployments", "default", "missing")
