"""Bad-input campaign, CRD spec: every field out of range, of the wrong type, missing or of extreme size,
through the CRD's schema, its CEL rules (cel-python) and the operator's own `parse_spec`.

Property: each checker either accepts or rejects with a message naming the
field; none raises anything else. A spec the schema and CEL accept and the
operator rejects is allowed (the operator checks more) but must name the field.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaign_tally import TALLY

from forescale_devcluster.crd_validation import validate, version_schema
from forescale_operator.spec import SpecError, parse_spec

ROOT = Path(__file__).resolve().parents[2]
CRD = yaml.safe_load((ROOT / "crds" / "forescale.io_inferencedeployments.yaml").read_text())
SPEC_SCHEMA = version_schema(CRD, "v1alpha1")["properties"]["spec"]
BASE = yaml.safe_load((ROOT / "crds" / "examples" / "full.yaml").read_text())["spec"]
#: a spec with targetRefs and a routeRef (the KServe-style example: both pools existing Deployments)
ADOPT_BASE = next(d for d in yaml.safe_load_all((ROOT / "crds" / "examples" / "adopt-kserve.yaml").read_text())
                  if d and d["kind"] == "InferenceDeployment")["spec"]
#: the long form (bench/campaign_inputs.py) raises this
EXAMPLES = int(os.environ.get("FORESCALE_CAMPAIGN_EXAMPLES", "60"))


def _leaves(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path into the example spec (objects and leaves), pod templates excluded beyond their root."""
    out = [path] if path else []
    if isinstance(value, dict) and path[-1:] != ("template",):
        for key, sub in value.items():
            out += _leaves(sub, path + (key,))
    elif isinstance(value, list):
        for i, sub in enumerate(value[:1]):
            out += _leaves(sub, path + (i,))
    return out


PATHS = _leaves(BASE)
ADOPT_PATHS = _leaves(ADOPT_BASE)
MISSING = object()

BAD_VALUES = st.one_of(
    st.just(MISSING),
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.text(min_size=5000, max_size=5000, alphabet="x\"}{$\\"),
    st.lists(st.integers(), max_size=3),
    st.lists(st.text(max_size=3), min_size=300, max_size=300),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.sampled_from([0, -1, 101, 0.0, 1.0, 1.5, -0.5, 1e308, "fp64", "AUTO", "", "1"]),
)


def _mutate(spec: dict, path: tuple, value: Any) -> dict:
    spec = copy.deepcopy(spec)
    node = spec
    for key in path[:-1]:
        node = node[key]
    if value is MISSING:
        if isinstance(node, list):
            node.pop(path[-1])
        else:
            node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return spec


def _pruned(value: Any) -> Any:
    """What kube-apiserver's decoding does before validating: it drops `null` from fields that are not
    `nullable`, and reads a whole float (`3.0`) that fits int64 as an integer (draft-4 jsonschema would call it a number)."""
    if isinstance(value, float) and value.is_integer() and -(2**63) <= value < 2**63:
        return int(value)
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _dotted(path: tuple) -> str:
    return ".".join(str(p) for p in path)


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations=st.lists(st.tuples(st.sampled_from(PATHS), BAD_VALUES), min_size=1, max_size=3))
def test_a_bad_spec_is_rejected_naming_the_field_or_parses(mutations):
    _check(BASE, mutations)


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations=st.lists(st.tuples(st.sampled_from(ADOPT_PATHS), BAD_VALUES), min_size=1, max_size=3))
def test_a_bad_adopting_spec_is_rejected_naming_the_field_or_parses(mutations):
    """The same property over targetRef, adoptOwned and routeRef."""
    _check(ADOPT_BASE, mutations)


def _check(base: dict, mutations: list) -> None:
    spec = base
    for path, value in mutations:
        try:
            spec = _mutate(spec, path, value)
        except (KeyError, IndexError, TypeError, AttributeError):
            continue  # an earlier mutation removed or replaced the parent: nothing to mutate
    TALLY.cases("crd spec (schema + CEL + parse_spec)")

    _, errors = validate({"spec": _pruned(spec)}, {"type": "object", "properties": {"spec": SPEC_SCHEMA}})
    for error in errors:
        where = error.split(":", 1)[0]
        assert where.startswith("spec") and ": " in error, error

    try:
        parse_spec(spec)
    except SpecError as exc:
        assert exc.field and str(exc).startswith(f"spec.{exc.field}: ") and exc.reason, str(exc)
        return
    # The operator accepted it: then the API server must have too (the CRD is not looser than the operator).
    # Known leniency, left as is: parse_spec reads a falsy value of the wrong type (false, 0, "", [], {})
    # as "not set" and takes the default, where the CRD rejects the type.
    if any(value is not MISSING and value is not None and not value for _, value in mutations):
        return
    # cel-python cannot evaluate a rule over an integer beyond int64 (kube-apiserver would have refused the
    # number while decoding, or pruned the unknown field holding it): that is the emulator's limit, not ours.
    if any(e.endswith("(overflow)") for e in errors):
        return
    assert not errors, f"parse_spec accepted what the CRD rejects: {errors}"


@settings(max_examples=max(10, EXAMPLES // 3), derandomize=True, deadline=None)
@given(path=st.sampled_from([p for p in PATHS if p[-1] in {"targetLatencyMs", "pools", "a", "b", "template", "slo"}]))
def test_a_missing_required_field_is_rejected_by_both(path):
    TALLY.cases("crd spec (schema + CEL + parse_spec)")
    spec = _mutate(BASE, path, MISSING)
    _, errors = validate({"spec": spec}, {"type": "object", "properties": {"spec": SPEC_SCHEMA}})
    assert errors, f"the CRD accepted a spec without {_dotted(path)}"
    try:
        parse_spec(spec)
    except SpecError as exc:
        assert path[-1] in str(exc) or path[-2] in str(exc), str(exc)
    else:
        raise AssertionError(f"parse_spec accepted a spec without {_dotted(path)}")


# Regression (found by the campaign above): parse_spec accepted parentRefs and custom queries of the
# wrong type that the CRD rejects (`parentRefs[0].name: true` reached the HTTPRoute).
@pytest.mark.parametrize("path,value,field", [
    (("traffic", "parentRefs", 0, "name"), True, "traffic.parentRefs[0].name"),
    (("traffic", "parentRefs", 0, "namespace"), 5, "traffic.parentRefs[0].namespace"),
    (("traffic", "parentRefs", 0, "port"), 70000, "traffic.parentRefs[0].port"),
    (("traffic", "parentRefs", 0), "gw", "traffic.parentRefs[0].name"),
    (("metrics", "latencyQuery"), 5, "metrics.latencyQuery"),
    (("forecast", "horizonSeconds"), 9.223372036854776e18, "forecast.horizonSeconds"),
    (("pools", "a", "maxReplicas"), 2**64, "pools.a.maxReplicas"),
])
def test_wrong_types_the_crd_rejects_are_rejected_by_parse_spec_too(path, value, field):
    spec = _mutate(BASE, path, value)
    with pytest.raises(SpecError) as err:
        parse_spec(spec)
    assert err.value.field == field
