"""targetRef, adoptOwned and routeRef: the CRD's schema and CEL rules and `parse_spec` agree, case by case.

Each bad case must be refused by both (the CRD names its rule, parse_spec the
field); each good case accepted by both, and the CRD's defaults must parse to
what parse_spec makes of the spec as written.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from forescale_devcluster.crd_validation import apply_defaults, cel_errors, schema_errors, version_schema
from forescale_operator.spec import RouteRef, SpecError, TargetRef, parse_spec

ROOT = Path(__file__).resolve().parents[2]
CRD = yaml.safe_load((ROOT / "crds" / "forescale.io_inferencedeployments.yaml").read_text())
SCHEMA = version_schema(CRD, "v1alpha1")
SPEC_SCHEMA = SCHEMA["properties"]["spec"]
TEMPLATE = {"spec": {"containers": [{"name": "s", "image": "i"}]}}


def adopted_spec() -> dict:
    """Both pools existing Deployments, behind an existing HTTPRoute."""
    return {"slo": {"targetLatencyMs": 200},
            "pools": {"a": {"targetRef": {"name": "chat"}}, "b": {"targetRef": {"name": "chat-int8"}}},
            "traffic": {"routeRef": {"kind": "HTTPRoute", "name": "chat", "backends": {"a": "chat", "b": "chat-int8"}}}}


def crd_errors(spec: dict) -> list[str]:
    obj = {"spec": apply_defaults(spec, SPEC_SCHEMA)}
    return schema_errors(obj, SCHEMA) + cel_errors(obj, SCHEMA)


def _set(path: str, value: Any) -> Callable[[dict], None]:
    def change(spec: dict) -> None:
        *parents, leaf = path.split(".")
        node = spec
        for key in parents:
            node = node.setdefault(key, {})
        if value is None:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return change


GOOD = [
    ("both pools adopted", []),
    ("pool b from a template, its Service by default", [_set("pools.b", {"template": TEMPLATE}),
                                                          _set("traffic.routeRef.backends", {"a": "chat"})]),
    ("a template pool behind an existing route", [_set("pools.a", {"template": TEMPLATE}),
                                                  _set("pools.b", {"template": TEMPLATE}),
                                                  _set("traffic.routeRef.backends", None)]),
    ("no router: only scaled", [_set("traffic", {"router": "none"})]),
    ("an Istio VirtualService", [_set("traffic.router", "istio"), _set("traffic.routeRef.kind", "VirtualService")]),
    ("adoptOwned on an adopted pool", [_set("pools.a.adoptOwned", True)]),
    ("apiVersion and kind written out", [_set("pools.a.targetRef", {"apiVersion": "apps/v1", "kind": "Deployment",
                                                                    "name": "chat"})]),
]


@pytest.mark.parametrize("changes", [g[1] for g in GOOD], ids=[g[0] for g in GOOD])
def test_good_specs_pass_both_and_the_crd_defaults_parse_alike(changes):
    spec = adopted_spec()
    for change in changes:
        change(spec)
    assert crd_errors(spec) == []
    assert parse_spec(apply_defaults(spec, SPEC_SCHEMA)) == parse_spec(spec)


def test_the_parsed_references():
    spec = parse_spec(adopted_spec())
    assert spec.a.target_ref == TargetRef("chat") and spec.b.target_ref == TargetRef("chat-int8")
    assert spec.adopts and spec.a.adopted and spec.a.template == {} and not spec.a.adopt_owned
    assert spec.traffic.route_ref == RouteRef("HTTPRoute", "chat", backends={"a": "chat", "b": "chat-int8"})


#: (case, changes, the CRD's message (schema or CEL), parse_spec's field)
BAD = [
    ("template and targetRef", [_set("pools.a.template", TEMPLATE)], "pools.a takes a template or a targetRef, not both",
     "pools.a"),
    ("neither", [_set("pools.b", {"minReplicas": 1})], "pools.b needs a template", "pools.b.template"),
    ("a StatefulSet", [_set("pools.a.targetRef.kind", "StatefulSet")], "is not one of", "pools.a.targetRef.kind"),
    ("another apiVersion", [_set("pools.a.targetRef.apiVersion", "apps/v1beta1")], "is not one of",
     "pools.a.targetRef.apiVersion"),
    ("no name", [_set("pools.a.targetRef.name", None)], "'name' is a required property", "pools.a.targetRef.name"),
    ("a bad name", [_set("pools.a.targetRef.name", "Chat_A")], "does not match", "pools.a.targetRef.name"),
    ("a bad namespace", [_set("pools.a.targetRef.namespace", "ML")], "does not match", "pools.a.targetRef.namespace"),
    ("one Deployment for both pools", [_set("pools.b.targetRef.name", "chat")],
     "must name two Deployments", "pools.b.targetRef.name"),
    ("adoptOwned on a template pool", [_set("pools.b", {"template": TEMPLATE, "adoptOwned": True}),
                                       _set("traffic.routeRef.backends", {"a": "chat"})],
     "adoptOwned applies only to a pool with a targetRef", "pools.b.adoptOwned"),
    ("targetRef with a route of Forescale's", [_set("traffic", {"parentRefs": [{"name": "gw"}]})],
     "pools with a targetRef need traffic.routeRef", "traffic.routeRef"),
    ("an adopted pool's backend unnamed", [_set("traffic.routeRef.backends", {"a": "chat"})],
     "traffic.routeRef.backends.b is required", "traffic.routeRef.backends.b"),
    ("one Service for both pools", [_set("traffic.routeRef.backends.b", "chat")],
     "must name two Services", "traffic.routeRef.backends.b"),
    ("a route kind that is not the router's", [_set("traffic.routeRef.kind", "VirtualService")],
     "must be HTTPRoute with router gatewayapi", "traffic.routeRef.kind"),
    ("routeRef with router none", [_set("traffic.router", "none")], "must be HTTPRoute with router gatewayapi",
     "traffic.routeRef"),
    ("an unknown route kind", [_set("traffic.routeRef.kind", "Ingress")], "is not one of", "traffic.routeRef.kind"),
    ("parentRefs beside routeRef", [_set("traffic.parentRefs", [{"name": "gw"}])],
     "not used with routeRef", "traffic.parentRefs"),
    ("hostnames beside routeRef", [_set("traffic.hostnames", ["chat.example.com"])],
     "not used with routeRef", "traffic.hostnames"),
    ("a Service name that is not a DNS label", [_set("traffic.routeRef.backends.a", "chat.svc")],
     "does not match", "traffic.routeRef.backends.a"),
]


@pytest.mark.parametrize("changes, crd_message, field", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_specs_are_refused_by_the_crd_and_by_parse_spec_naming_the_field(changes, crd_message, field):
    spec = adopted_spec()
    for change in changes:
        change(spec)
    errors = crd_errors(spec)
    assert any(crd_message in e for e in errors), errors
    with pytest.raises(SpecError) as err:
        parse_spec(copy.deepcopy(spec))
    assert err.value.field == field, str(err.value)


def test_the_examples_adopt_what_they_ship(example):
    for name, pools in (("adopt", ("embed", None)), ("adopt-kserve", ("sentiment-predictor", "sentiment-int8-predictor"))):
        spec = parse_spec(example(name)["spec"])
        assert spec.preview, "the examples start in Preview"
        assert tuple(p.target_ref.name if p.target_ref else None for p in (spec.a, spec.b)) == pools
        assert spec.traffic.route_ref is not None
