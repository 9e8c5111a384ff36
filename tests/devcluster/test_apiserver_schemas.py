"""The emulated API server checks what is written against the official schemas:
routes against the Gateway API's and Istio's own CRDs (CEL rules included),
Deployments, Services and Events against kubernetes-validate's built-in ones."""

from __future__ import annotations

import logging

import pytest

from forescale_devcluster.conformance import route_schemas
from forescale_operator.children import Owner
from forescale_operator.routers.gatewayapi import route_body
from forescale_operator.routers.istio import virtual_service_body
from forescale_operator.spec import parse_spec
from forescale_operator.weights import Weights

ROUTES = "/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes"
VIRTUAL_SERVICES = "/apis/networking.istio.io/v1/namespaces/default/virtualservices"
SERVICES = "/api/v1/namespaces/default/services"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
EVENTS = "/api/v1/namespaces/default/events"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
TEMPLATE = {"spec": {"containers": [{"name": "s", "image": "i"}]}}

pytestmark = pytest.mark.skipif(set(route_schemas()) != {"httproutes", "virtualservices"},
                                reason="the official route CRDs (../shared/conformance) are not here")


def _traffic(**traffic):
    return parse_spec({"slo": {"targetLatencyMs": 200}, "pools": {"a": {"template": TEMPLATE}, "b": {"template": TEMPLATE}},
                       "traffic": {"parentRefs": [{"name": "gw", "namespace": "gateways"}], **traffic}}).traffic


OWNER = Owner("chat", "default", "uid-1")


def test_the_operators_httproute_passes_and_gets_the_official_defaults(http):
    response = http.post(ROUTES, json=route_body(OWNER, _traffic(hostnames=["chat.example.com"]), Weights(70, 30)))
    assert response.status_code == 201, response.text
    refs = response.json()["spec"]["rules"][0]["backendRefs"]
    assert [(r["kind"], r["group"], r["weight"]) for r in refs] == [("Service", "", 70), ("Service", "", 30)]


def test_the_operators_virtualservice_passes(http):
    response = http.post(VIRTUAL_SERVICES, json=virtual_service_body(OWNER, _traffic(router="istio"), Weights(100, 0)))
    assert response.status_code == 201, response.text


def _route(**spec_change):
    body = route_body(OWNER, _traffic(), Weights(100, 0))
    body["spec"].update(spec_change)
    return body


REFUSED = [
    # (case, path, body, text in the 422 message)
    ("hostname with capitals (schema)", ROUTES, _route(hostnames=["Chat.Example.com"]), "spec.hostnames.0:"),
    ("sectionName with an underscore (schema)", ROUTES, _route(parentRefs=[{"name": "gw", "sectionName": "HTTPS_1"}]),
     "spec.parentRefs.0.sectionName:"),
    ("same parent twice without sectionName (CEL)", ROUTES, _route(parentRefs=[{"name": "gw"}, {"name": "gw", "sectionName": "https"}]),
     "sectionName must be specified when parentRefs includes 2 or more references to the same parent"),
    ("weight over the maximum (schema)", ROUTES,
     _route(rules=[{"backendRefs": [{"name": "chat-a", "port": 8000, "weight": 1_000_001}]}]), "weight"),
    ("Service port as a word", SERVICES,
     {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "chat-a"}, "spec": {"ports": [{"port": "http"}]}},
     "spec.ports.0.port:"),
    ("Deployment without a selector", DEPLOYMENTS,
     {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "chat-a"},
      "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}, "'selector' is a required property"),
    ("Lease with a duration as text", LEASES,
     {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "forescale-operator"},
      "spec": {"holderIdentity": "op-a", "leaseDurationSeconds": "30s"}}, "spec.leaseDurationSeconds:"),
    ("Lease with a misspelt field", LEASES,
     {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "forescale-operator"},
      "spec": {"holder": "op-a"}}, "holder"),
    ("Event with a misspelt field", EVENTS,
     {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"}, "reason": "R", "mesage": "typo",
      "involvedObject": {"kind": "InferenceDeployment", "name": "chat"}}, "mesage"),
]


@pytest.mark.parametrize("case,path,body,text", REFUSED, ids=[r[0] for r in REFUSED])
def test_what_the_official_schemas_refuse_is_a_422(http, case, path, body, text):
    response = http.post(path, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["reason"] == "Invalid" and text in response.json()["message"]


def test_a_missing_official_crd_is_said_not_silently_skipped(tmp_path, caplog):
    (tmp_path / "SOURCES.md").write_text("an empty conformance folder\n")
    with caplog.at_level(logging.WARNING, logger="forescale.devcluster"):
        assert route_schemas({"FORESCALE_CONFORMANCE": str(tmp_path)}) == {}
    assert "gateway.networking.k8s.io_httproutes.yaml not found" in caplog.text and "FORESCALE_CONFORMANCE" in caplog.text
