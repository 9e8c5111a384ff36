"""The CRD: structural, valid for kubernetes-validate --strict, defaults equal to spec.py's, CEL rules right."""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from forescale_devcluster.crd_validation import apply_defaults, cel_errors, schema_errors, version_schema
from forescale_operator.spec import parse_spec

ROOT = Path(__file__).resolve().parents[2]
CRD = yaml.safe_load((ROOT / "crds" / "forescale.io_inferencedeployments.yaml").read_text())
SCHEMA = version_schema(CRD, "v1alpha1")
SPEC_SCHEMA = SCHEMA["properties"]["spec"]
EXAMPLES = sorted((ROOT / "crds" / "examples").glob("*.yaml"))
TEMPLATE = {"spec": {"containers": [{"name": "s", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}


def minimal_spec(**extra) -> dict:
    spec = {"slo": {"targetLatencyMs": 200}, "pools": {"a": {"template": TEMPLATE}, "b": {"template": TEMPLATE}},
            "traffic": {"parentRefs": [{"name": "gw"}]}}
    spec.update(extra)
    return spec


def test_kubernetes_validate_strict_accepts_the_crds_and_examples():
    tool = shutil.which("kubernetes-validate", path=str(Path(sys.executable).parent))
    assert tool, "kubernetes-validate is a test dependency"
    files = [str(p) for p in sorted((ROOT / "crds").glob("*.yaml"))] + [str(p) for p in EXAMPLES]
    result = subprocess.run([tool, "--strict", *files], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    # The InferenceDeployment CRD, kopf's two peering CRDs, and the Deployments and Services the adopt examples run.
    shipped = [d for p in EXAMPLES for d in yaml.safe_load_all(p.read_text()) if d and d["kind"] in ("Deployment", "Service")]
    assert result.stdout.count("passed") == 3 + len(shipped)


@pytest.mark.parametrize("spec", [
    minimal_spec(),
    minimal_spec(forecast={"modelRef": {"configMap": "m"}}),
    minimal_spec(traffic={"router": "none"}),
    minimal_spec(pools={"a": {"minReplicas": 12, "template": TEMPLATE}, "b": {"template": TEMPLATE}}, ),
], ids=["minimal", "model-ref", "no-router", "big-min"])
def test_crd_defaults_equal_the_parsers_defaults(spec):
    if spec["pools"]["a"].get("minReplicas") == 12:
        # The CRD cannot express max(minReplicas, 10); the CEL rule makes the user say it.
        spec["pools"]["a"]["maxReplicas"] = 12
    defaulted = apply_defaults(spec, SPEC_SCHEMA)
    assert defaulted != spec  # the CRD did fill something in
    assert parse_spec(defaulted) == parse_spec(spec)


def _defaults(schema: dict, path: str = "") -> dict[str, object]:
    found = {}
    for key, sub in (schema.get("properties") or {}).items():
        where = f"{path}.{key}" if path else key
        if "default" in sub and sub["default"] != {}:
            found[where] = sub["default"]
        found.update(_defaults(sub, where))
    return found


def test_every_scalar_default_is_covered_by_the_equivalence_test():
    # The equivalence tests (above, and test_spec_adoption.py for targetRef) compare whole parsed specs; this pins
    # the list so a new default is noticed.
    assert sorted(_defaults(SPEC_SCHEMA)) == sorted([
        "mode", "slo.quantile", "pools.a.minReplicas", "pools.a.maxReplicas", "pools.a.precision", "pools.a.costWeight",
        "pools.b.minReplicas", "pools.b.maxReplicas", "pools.b.precision", "pools.b.costWeight", "warmReservePercent",
        "pools.a.targetRef.apiVersion", "pools.a.targetRef.kind", "pools.b.targetRef.apiVersion", "pools.b.targetRef.kind",
        "forecast.horizonSeconds", "forecast.stepSeconds", "forecast.modelRef.key", "metrics.preset", "traffic.router",
        "traffic.emergencyWeightPercent", "traffic.overloadMaxPercent", "traffic.cutback.stepPercent", "traffic.cutback.intervalSeconds",
        "traffic.cutback.stableSeconds", "emergency.triggerRatio", "emergency.errorRatePercent",
        "emergency.precisionFallback", "emergency.minAgreement", "emergency.cacheWarmup", "emergency.debugLogSeconds"])


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_examples_pass_schema_cel_and_parser(example):
    (doc,) = [d for d in yaml.safe_load_all(example.read_text()) if d and d["kind"] == "InferenceDeployment"]
    defaulted = apply_defaults(doc, SCHEMA)
    assert schema_errors(defaulted, SCHEMA) == []
    assert cel_errors(defaulted, SCHEMA) == []
    parse_spec(doc["spec"])


@pytest.mark.parametrize("change, error", [
    ({"pools": {"a": {"minReplicas": 3, "maxReplicas": 2, "template": TEMPLATE}, "b": {"template": TEMPLATE}}},
     "pools.a.minReplicas must be <= maxReplicas"),
    ({"pools": {"a": {"template": TEMPLATE}, "b": {"minReplicas": 4, "maxReplicas": 3, "template": TEMPLATE}}},
     "pools.b.minReplicas must be <= maxReplicas"),
    ({"forecast": {"stepSeconds": 200, "horizonSeconds": 180}}, "forecast.stepSeconds must be <= forecast.horizonSeconds"),
    ({"metrics": {"preset": "custom", "latencyQuery": "q"}}, "metrics preset custom needs both latencyQuery and rateQuery"),
    ({"traffic": {"router": "gatewayapi"}}, "router gatewayapi needs at least one parentRef"),
])
def test_cel_rules_reject_cross_field_mistakes(change, error):
    spec = apply_defaults(minimal_spec(**change), SPEC_SCHEMA)
    messages = cel_errors({"spec": spec}, SCHEMA)
    assert any(error in m for m in messages), messages


def test_cel_rule_a_min_replicas_at_least_one_is_evaluated():
    rule = next(r for r in SPEC_SCHEMA["properties"]["pools"]["properties"]["a"]["x-kubernetes-validations"]
                if "minReplicas >= 1" in r["rule"])
    spec = apply_defaults(minimal_spec(), SPEC_SCHEMA)
    spec["pools"]["a"]["minReplicas"] = 0  # the schema's minimum would stop this first; the rule says it again
    assert any(rule["message"] in m for m in cel_errors({"spec": spec}, SCHEMA))


@pytest.mark.parametrize("path, value, error", [
    ("slo.targetLatencyMs", 0, "less than or equal to the minimum of 0"),
    ("slo.quantile", 1.0, "greater than the maximum of 0.9999"),
    ("pools.a.precision", "fp8", "is not one of"),
    ("warmReservePercent", 101, "greater than the maximum of 100"),
    ("traffic.emergencyWeightPercent", -1, "less than the minimum of 0"),
    ("traffic.overloadMaxPercent", 101, "greater than the maximum of 100"),
    ("traffic.cutback.stepPercent", 0, "less than the minimum of 1"),
    ("forecast.stepSeconds", 0, "less than the minimum of 1"),
    ("mode", "Manual", "is not one of"),
    ("emergency.minAgreement", 1.5, "greater than the maximum of 1"),
])
def test_schema_rejects_out_of_range_values(path, value, error):
    spec = copy.deepcopy(minimal_spec())
    node = spec
    *parents, leaf = path.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value
    messages = schema_errors({"spec": apply_defaults(spec, SPEC_SCHEMA)}, SCHEMA)
    assert any(error in m and path.split(".")[-1] in m for m in messages), messages


def _preserve_paths(schema: dict, path: str = "") -> list[str]:
    found = [path] if schema.get("x-kubernetes-preserve-unknown-fields") else []
    for key, sub in (schema.get("properties") or {}).items():
        found += _preserve_paths(sub, f"{path}.{key}")
    if "items" in schema:
        found += _preserve_paths(schema["items"], f"{path}[]")
    return found


def test_unknown_fields_are_preserved_only_under_pod_templates():
    assert _preserve_paths(SCHEMA) == [".spec.pools.a.template", ".spec.pools.b.template"]


def test_crd_names_subresources_and_printer_columns():
    spec = CRD["spec"]
    assert (spec["group"], spec["names"]["kind"], spec["names"]["plural"], spec["scope"]) == (
        "forescale.io", "InferenceDeployment", "inferencedeployments", "Namespaced")
    assert spec["names"]["shortNames"] == ["infd"] and "forescale" in spec["names"]["categories"]
    version = spec["versions"][0]
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Phase", "A", "B", "Weight-B", "Forecast-p99", "SLO", "Age"]


def test_status_schema_covers_every_status_field_of_the_design():
    status = SCHEMA["properties"]["status"]["properties"]
    assert set(status) >= {"phase", "conditions", "pools", "weights", "forecast", "cutback", "lastDecision",
                           "observedGeneration"}
    assert set(status["pools"]["properties"]["a"]["properties"]) >= {
        "replicas", "readyReplicas", "desiredReplicas", "precision", "runtimePrecision", "capacityRps"}
    assert set(status["forecast"]["properties"]) == {"peakLatencyMs", "peakRate", "horizonSeconds", "model",
                                                     "generatedAt", "recentErrorMs", "bandCoverage", "modelSource",
                                                     "selection", "nominalCoverage", "recentErrorRate",
                                                     "rateBandCoverage"}
    assert status["conditions"]["items"]["properties"]["type"]["enum"] == [
        "Ready", "MetricsAvailable", "ForecastReady", "Emergency", "AdminReady"]



def test_status_weights_are_bounded_by_the_schema():
    status_only = {"type": "object", "properties": {"status": SCHEMA["properties"]["status"]}}
    errors = schema_errors({"status": {"weights": {"a": 101, "b": -1}}}, status_only)
    assert any("101 is greater than the maximum of 100" in e for e in errors)
    assert any("-1 is less than the minimum of 0" in e for e in errors)


def test_status_diagnosis_names_exactly_the_checklists_causes_and_verdicts():
    from forescale_operator.diagnosis import CAUSES
    from forescale_operator.diagnosis.rules import STATUSES

    diagnosis = SCHEMA["properties"]["status"]["properties"]["diagnosis"]["properties"]
    item = diagnosis["findings"]["items"]["properties"]
    assert diagnosis["top"]["enum"] == item["cause"]["enum"] == list(CAUSES)
    assert sorted(item["status"]["enum"]) == sorted(STATUSES)
    assert diagnosis["message"]["maxLength"] >= 1000  # rank.MAX_MESSAGE_CHARS


@pytest.mark.parametrize("diagnosis,error", [
    ({"top": "gremlins"}, "'gremlins' is not one of"),
    ({"findings": [{"cause": "overload", "status": "maybe"}]}, "'maybe' is not one of"),
    ({"findings": [{"cause": "overload", "status": "suspected", "score": 1.5}]}, "1.5 is greater than the maximum of 1"),
    ({"findings": [{"status": "clear"}]}, "'cause' is a required property"),
], ids=["unknown-top", "unknown-verdict", "score-over-1", "no-cause"])
def test_status_diagnosis_refuses_what_the_checklist_never_writes(diagnosis, error):
    status_only = {"type": "object", "properties": {"status": SCHEMA["properties"]["status"]}}
    errors = schema_errors({"status": {"diagnosis": diagnosis}}, status_only)
    assert any(error in e for e in errors), errors
