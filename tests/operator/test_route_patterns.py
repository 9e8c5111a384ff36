"""What the operator copies into a route passes the Gateway API's own schema:
the CRD (at `kubectl apply`) and parse_spec (at parse time) refuse what the
official HTTPRoute CRD would refuse, naming the field and the pattern; and the
name leaves every child a valid DNS-1035 label."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from forescale_devcluster.conformance import load_crd
from forescale_devcluster.crd_validation import schema_errors, version_schema
from forescale_operator import spec as spec_module
from forescale_operator.spec import SpecError, check_name, parse_spec

ROOT = Path(__file__).resolve().parents[2]
CRD = yaml.safe_load((ROOT / "crds" / "forescale.io_inferencedeployments.yaml").read_text())
SCHEMA = version_schema(CRD, "v1alpha1")
TEMPLATE = {"spec": {"containers": [{"name": "s", "image": "i"}]}}
BASE = {"slo": {"targetLatencyMs": 200}, "pools": {"a": {"template": TEMPLATE}, "b": {"template": TEMPLATE}},
        "traffic": {"parentRefs": [{"name": "gw", "namespace": "gateways", "sectionName": "https"}],
                    "hostnames": ["chat.example.com", "*.example.org"]}}


def _with(traffic_change: dict) -> dict:
    spec = copy.deepcopy(BASE)
    for key, value in traffic_change.items():
        if key == "parentRef":
            spec["traffic"]["parentRefs"][0].update(value)
        else:
            spec["traffic"][key] = value
    return spec


BAD = [
    # (case, change, field parse_spec names, what its message quotes, schema path the CRD names)
    ("upper-case hostname", {"hostnames": ["Chat.Example.com"]}, "traffic.hostnames[0]", spec_module.HOSTNAME_PATTERN, "spec.traffic.hostnames.0"),
    ("hostname with a port", {"hostnames": ["chat.example.com:8443"]}, "traffic.hostnames[0]", spec_module.HOSTNAME_PATTERN, "spec.traffic.hostnames.0"),
    ("wildcard not first", {"hostnames": ["chat.*.example.com"]}, "traffic.hostnames[0]", spec_module.HOSTNAME_PATTERN, "spec.traffic.hostnames.0"),
    ("17 hostnames", {"hostnames": [f"h{i}.example.com" for i in range(17)]}, "traffic.hostnames", "at most 16", "spec.traffic.hostnames"),
    ("upper-case parentRef namespace", {"parentRef": {"namespace": "Gateways"}}, "traffic.parentRefs[0].namespace", spec_module.NAMESPACE_PATTERN, "spec.traffic.parentRefs.0.namespace"),
    ("64-character namespace", {"parentRef": {"namespace": "n" * 64}}, "traffic.parentRefs[0].namespace", "1 to 63 characters", "spec.traffic.parentRefs.0.namespace"),
    ("sectionName with an underscore", {"parentRef": {"sectionName": "HTTPS_1"}}, "traffic.parentRefs[0].sectionName", spec_module.SECTION_NAME_PATTERN, "spec.traffic.parentRefs.0.sectionName"),
    ("kind with a space", {"parentRef": {"kind": "Gate way"}}, "traffic.parentRefs[0].kind", spec_module.KIND_PATTERN, "spec.traffic.parentRefs.0.kind"),
    ("upper-case group", {"parentRef": {"group": "Gateway.Networking.k8s.io"}}, "traffic.parentRefs[0].group", spec_module.GROUP_PATTERN, "spec.traffic.parentRefs.0.group"),
    ("33 parentRefs", {"parentRefs": [{"name": f"gw{i}"} for i in range(33)]}, "traffic.parentRefs", "at most 32", "spec.traffic.parentRefs"),
]


@pytest.mark.parametrize("case,change,field,quoted,schema_path", BAD, ids=[b[0] for b in BAD])
def test_route_fields_the_gateway_api_refuses_are_refused_by_the_crd_and_parse_spec(case, change, field, quoted, schema_path):
    spec = _with(change)
    with pytest.raises(SpecError) as err:
        parse_spec(spec)
    assert err.value.field == field and quoted in str(err.value)
    errors = schema_errors({"spec": spec}, SCHEMA)
    assert errors and all(e.startswith(schema_path + ":") for e in errors), errors


def test_valid_route_fields_pass_both():
    assert schema_errors({"spec": BASE}, SCHEMA) == []
    parsed = parse_spec(BASE)
    assert parsed.traffic.hostnames == ("chat.example.com", "*.example.org")


NAMES = [
    ("61 characters", "a" * 61, True),
    ("62 characters: chat-...-a would be 64", "a" * 62, False),
    ("upper case", "Chat", False),
    ("leading digit (Services are DNS-1035 labels)", "1chat", False),
    ("trailing dash", "chat-", False),
    ("dots", "chat.v1", False),
]


@pytest.mark.parametrize("case,name,ok", NAMES, ids=[n[0] for n in NAMES])
def test_name_leaves_every_child_name_a_dns_1035_label(case, name, ok):
    errors = schema_errors({"metadata": {"name": name}, "spec": BASE}, SCHEMA)
    if ok:
        check_name(name)
        assert errors == []
        assert all(len(f"{name}-{pool}") <= 63 for pool in ("a", "b"))
        return
    with pytest.raises(SpecError) as err:
        check_name(name)
    assert str(err.value).startswith("metadata.name: ") and spec_module.NAME_PATTERN in str(err.value)
    assert errors and errors[0].startswith("metadata.name:"), errors


HTTPROUTE = load_crd("gateway-api/gateway.networking.k8s.io_httproutes.yaml")


@pytest.mark.skipif(HTTPROUTE is None, reason="the official HTTPRoute CRD (../shared/conformance) is not here")
def test_patterns_and_limits_are_the_official_httproutes():
    official = version_schema(HTTPROUTE, "v1")["properties"]["spec"]["properties"]
    ours = SCHEMA["properties"]["spec"]["properties"]["traffic"]["properties"]
    for key in ("pattern", "maxLength", "minLength"):
        assert ours["hostnames"]["items"].get(key) == official["hostnames"]["items"].get(key), key
    assert ours["hostnames"]["maxItems"] == official["hostnames"]["maxItems"] == spec_module.MAX_HOSTNAMES
    assert ours["parentRefs"]["maxItems"] == official["parentRefs"]["maxItems"] == spec_module.MAX_PARENT_REFS
    for field, (pattern, shortest, longest) in spec_module.PARENT_REF_FIELDS.items():
        theirs = official["parentRefs"]["items"]["properties"][field]
        mine = ours["parentRefs"]["items"]["properties"][field]
        assert mine.get("pattern") == theirs.get("pattern") == pattern, field
        assert mine.get("maxLength") == theirs.get("maxLength") == longest, field
        assert theirs.get("minLength", 0) == shortest, field
    assert official["hostnames"]["items"]["pattern"] == spec_module.HOSTNAME_PATTERN
