"""The desired children: names, labels, environment, owner references, templates as users wrote them."""

from __future__ import annotations

import pytest

from forescale_operator import children
from forescale_operator.children import Owner
from forescale_operator.spec import PoolSpec

OWNER = Owner("chat", "ml", "uid-1")


def pool(name="a", precision="fp16", template=None) -> PoolSpec:
    template = template or {"metadata": {"labels": {"team": "x"}}, "spec": {
        "initContainers": [{"name": "init", "image": "busybox"}],
        "containers": [{"name": "server", "image": "img", "env": [{"name": "FORESCALE_POOL", "value": "stale"},
                                                                  {"name": "KEEP", "value": "1"}],
                        "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
    return PoolSpec(name, 2, 5, precision, 1.0, template)


def test_deployment_names_labels_selector_and_owner():
    body = children.deployment(OWNER, pool(), 3)
    assert body["metadata"]["name"] == "chat-a" and body["metadata"]["namespace"] == "ml"
    assert body["metadata"]["labels"]["forescale.io/deployment"] == "chat"
    assert body["metadata"]["labels"]["forescale.io/pool"] == "a"
    assert body["metadata"]["ownerReferences"] == [{"apiVersion": "forescale.io/v1alpha1", "kind": "InferenceDeployment",
                                                    "name": "chat", "uid": "uid-1", "controller": True,
                                                    "blockOwnerDeletion": True}]
    assert body["spec"]["replicas"] == 3
    assert body["spec"]["selector"]["matchLabels"] == {"forescale.io/deployment": "chat", "forescale.io/pool": "a"}


@pytest.mark.parametrize("name, precision", [("a", "fp16"), ("b", "int8")])
def test_pods_carry_labels_and_environment(name, precision):
    template = children.pod_template(OWNER, pool(name, precision))
    labels = template["metadata"]["labels"]
    assert labels["team"] == "x" and labels["forescale.io/pool"] == name and labels["forescale.io/precision"] == precision
    for container in template["spec"]["containers"] + template["spec"]["initContainers"]:
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["FORESCALE_DEPLOYMENT"] == "chat" and env["FORESCALE_POOL"] == name
        assert env["FORESCALE_PRECISION"] == precision
    server_env = template["spec"]["containers"][0]["env"]
    assert [e["name"] for e in server_env].count("FORESCALE_POOL") == 1 and {"name": "KEEP", "value": "1"} in server_env


def test_integer_gpu_limit_is_kept_and_the_spec_is_not_mutated():
    spec_pool = pool()
    template = children.pod_template(OWNER, spec_pool)
    assert template["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert spec_pool.template["spec"]["containers"][0]["env"][0]["value"] == "stale"


def test_three_services_select_their_pools():
    a, b, both = children.services(OWNER, pool("a"), pool("b"))
    assert [s["metadata"]["name"] for s in (a, b, both)] == ["chat-a", "chat-b", "chat"]
    assert a["spec"]["selector"] == {"forescale.io/deployment": "chat", "forescale.io/pool": "a"}
    assert both["spec"]["selector"] == {"forescale.io/deployment": "chat"}
    assert all(s["metadata"]["ownerReferences"][0]["uid"] == "uid-1" for s in (a, b, both))


@pytest.mark.parametrize("ports, target", [
    ([], 8000), ([{"containerPort": 9000}], 9000), ([{"containerPort": 9000}, {"name": "http", "containerPort": 8080}], "http")])
def test_service_target_port(ports, target):
    template = {"spec": {"containers": [{"name": "s", "image": "i", "ports": ports}]}}
    assert children.target_port(pool(template=template)) == target


def test_spec_hash_follows_the_template_not_the_replicas():
    one, three = children.deployment(OWNER, pool(), 1), children.deployment(OWNER, pool(), 3)
    key = children.ANNOTATION_SPEC_HASH
    assert one["metadata"]["annotations"][key] == three["metadata"]["annotations"][key]
    other = children.deployment(OWNER, pool(precision="int8"), 1)
    assert other["metadata"]["annotations"][key] != one["metadata"]["annotations"][key]
    assert not children.needs_update(one, three)
    assert children.needs_update(one, other)


SECRET = ("forescale-admin", "token")


@pytest.mark.parametrize("name", ["a", "b"])
def test_the_admin_token_reaches_both_pools_server_container(name):
    template = children.pod_template(OWNER, pool(name), SECRET)
    spec = template["spec"]
    assert spec["volumes"] == [{"name": "forescale-admin-token", "projected": {
        "sources": [{"secret": {"name": "forescale-admin", "items": [{"key": "token", "path": "token"}]}}]}}]
    server = spec["containers"][0]
    assert {"name": "FORESCALE_ADMIN_TOKEN_FILE", "value": "/var/run/forescale/token"} in server["env"]
    assert server["volumeMounts"] == [{"name": "forescale-admin-token", "mountPath": "/var/run/forescale", "readOnly": True}]
    assert "volumeMounts" not in spec["initContainers"][0]  # only the server holds the token


def test_a_template_wiring_its_own_token_is_replaced_not_doubled():
    template = {"spec": {"volumes": [{"name": "models", "emptyDir": {}}, {"name": "forescale-admin-token", "emptyDir": {}}],
                         "containers": [{"name": "server", "image": "img",
                                         "env": [{"name": "FORESCALE_ADMIN_TOKEN_FILE", "value": "/elsewhere"}],
                                         "volumeMounts": [{"name": "models", "mountPath": "/models"},
                                                          {"name": "old", "mountPath": "/var/run/forescale"}]},
                                        {"name": "sidecar", "image": "envoy"}]}}
    spec = children.pod_template(OWNER, pool(template=template), SECRET)["spec"]
    assert [v["name"] for v in spec["volumes"]] == ["models", "forescale-admin-token"] and "projected" in spec["volumes"][1]
    server = spec["containers"][0]
    assert [e["value"] for e in server["env"] if e["name"] == "FORESCALE_ADMIN_TOKEN_FILE"] == ["/var/run/forescale/token"]
    assert [m["mountPath"] for m in server["volumeMounts"]] == ["/models", "/var/run/forescale"]
    assert "volumeMounts" not in spec["containers"][1]
    assert template["spec"]["volumes"][1] == {"name": "forescale-admin-token", "emptyDir": {}}  # the spec is not mutated


def test_without_the_setting_the_template_is_left_as_written():
    spec = children.pod_template(OWNER, pool())["spec"]
    assert "volumes" not in spec and "volumeMounts" not in spec["containers"][0]
    assert not any(e["name"] == "FORESCALE_ADMIN_TOKEN_FILE" for e in spec["containers"][0]["env"])


def test_the_token_wiring_is_part_of_the_template_hash():
    # turning FORESCALE_ADMIN_TOKEN_SECRET on rolls the pools, so running pods get the token too
    plain, wired = children.deployment(OWNER, pool(), 1), children.deployment(OWNER, pool(), 1, SECRET)
    assert plain["metadata"]["annotations"]["forescale.io/spec-hash"] != wired["metadata"]["annotations"]["forescale.io/spec-hash"]
