"""The emulated API server's CRD checks: CEL rules ratchet on update, as kube-apiserver's do (KEP-4008)."""

from __future__ import annotations

import copy

import pytest
import yaml

from forescale_devcluster.crd_validation import apply_defaults, validate, version_schema

pytest.importorskip("celpy", reason="cel-python is not installed")


@pytest.fixture(scope="module")
def schema(crds_dir):
    crd = next(d for d in yaml.safe_load_all((crds_dir / "forescale.io_inferencedeployments.yaml").read_text()) if d)
    return version_schema(crd, crd["spec"]["versions"][0]["name"])


def _resource(schema, a_min=1, a_max=4, b_max=2, status=None):
    tpl = {"spec": {"containers": [{"name": "s", "image": "i"}]}}
    obj = {"apiVersion": "forescale.io/v1alpha1", "kind": "InferenceDeployment",
           "metadata": {"name": "chat", "namespace": "default"},
           "spec": {"slo": {"targetLatencyMs": 200}, "traffic": {"router": "none"},
                    "pools": {"a": {"minReplicas": a_min, "maxReplicas": a_max, "template": tpl},
                              "b": {"minReplicas": 1, "maxReplicas": b_max, "template": tpl}}}}
    if status is not None:
        obj["status"] = status
    return apply_defaults(obj, schema)


A_RULE = "spec.pools.a.maxReplicas: pools.a.minReplicas must be <= maxReplicas"


@pytest.mark.parametrize("case, stored, written, refused", [
    ("a create is checked whole", None, {"a_min": 5, "a_max": 2}, True),
    ("a valid update passes", {}, {"a_max": 6}, False),
    ("an update that breaks a rule is refused", {}, {"a_min": 5, "a_max": 2}, True),
    # stored before the rule existed (or by hand): what the update leaves as it was is not checked again
    ("a status write on a resource that breaks a rule passes", {"a_min": 5, "a_max": 2},
     {"a_min": 5, "a_max": 2, "status": {"phase": "Stable"}}, False),
    ("an update of another pool leaves pool a's rule alone", {"a_min": 5, "a_max": 2},
     {"a_min": 5, "a_max": 2, "b_max": 3}, False),
    ("an update that touches the failing pool is checked", {"a_min": 5, "a_max": 2}, {"a_min": 5, "a_max": 3}, True),
])
def test_cel_rules_ratchet_on_update(schema, case, stored, written, refused):
    old = None if stored is None else _resource(schema, **stored)
    _, errors = validate(_resource(schema, **written), schema, copy.deepcopy(old) if old else None)
    assert (A_RULE in "; ".join(errors) if refused else errors == []), (case, errors)
