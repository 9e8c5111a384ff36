"""Bad values files are rejected with a clear helm error naming the problem (values.schema.json and template checks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from chart_tools import CHART, helm_path, helm_template, run

BAD = Path(__file__).resolve().parent / "bad-values"

CASES = [
    ("unknown-top-level-key.yaml", "Additional property operater is not allowed"),
    ("unknown-nested-key.yaml", "operator: Additional property prometheusURL is not allowed"),
    ("replicas-not-integer.yaml", "operator.replicas: Invalid type. Expected: integer, given: string"),
    ("namespaces-not-list.yaml", "operator.namespaces: Invalid type. Expected: array, given: string"),
    ("bad-log-level.yaml", "operator.logLevel: operator.logLevel must be one of the following"),
    ("crds-install-not-boolean.yaml", "crds.install: Invalid type. Expected: boolean, given: string"),
    ("bad-alert-duration.yaml", "metrics.prometheusRule.emergencyTooLong.after: Does not match pattern"),
    ("bad-image-digest.yaml", "image.digest: Does not match pattern"),
    ("port-out-of-range.yaml", "operator.metricsPort: Must be less than or equal to 65535"),
    ("ratio-not-number.yaml", "metrics.prometheusRule.forecastErrorHigh.ratio: Does not match pattern"),
    ("tag-not-string.yaml", "image.tag: Invalid type. Expected: string, given: number"),
    ("replicas-without-peering.yaml", "operator.replicas is 3 but operator.peering.enabled is false"),
    ("same-ports.yaml", "operator.metricsPort and operator.healthPort are both 8081"),
    ("all-namespaces-beside-namespaces.yaml", "operator.extraArgs has -A but operator.namespaces is set"),
    ("extra-env-repeats-a-chart-variable.yaml", "operator.extraEnv sets FORESCALE_PROMETHEUS_URL, which the chart sets"),
    ("tmp-size-not-a-quantity.yaml", "tmpSizeLimit: Does not match pattern"),
]
#: Rules the schema cannot express, checked by "forescale.validate" in _helpers.tpl.
TEMPLATE_CHECKS = {"replicas-without-peering.yaml", "same-ports.yaml", "all-namespaces-beside-namespaces.yaml",
                   "extra-env-repeats-a-chart-variable.yaml"}


def test_every_bad_values_file_has_a_case():
    assert sorted(p.name for p in BAD.glob("*.yaml")) == sorted(name for name, _ in CASES)


@pytest.mark.parametrize(("name", "message"), CASES, ids=[name for name, _ in CASES])
def test_bad_values_are_rejected_by_template_and_lint(name, message):
    result = helm_template([BAD / name])
    assert result.returncode != 0, f"{name} was accepted"
    assert message in result.stderr, result.stderr
    assert "goroutine" not in result.stderr  # an error message, not a crash
    if name in TEMPLATE_CHECKS:
        return  # helm lint turns a template's `fail` into an INFO line by design; install and template fail
    lint = run([helm_path(), "lint", "--strict", str(CHART), "--values", str(BAD / name)])
    assert lint.returncode != 0 and message in lint.stdout + lint.stderr


def _schema_keys(schema: dict, prefix: str = "") -> set[str]:
    keys = set()
    for key, sub in (schema.get("properties") or {}).items():
        keys.add(prefix + key)
        if sub.get("additionalProperties") is False:
            keys |= _schema_keys(sub, prefix + key + ".")
    return keys


def _value_keys(values: dict, schema: dict, prefix: str = "") -> set[str]:
    keys = set()
    for key, value in values.items():
        keys.add(prefix + key)
        sub = (schema.get("properties") or {}).get(key, {})
        if isinstance(value, dict) and sub.get("additionalProperties") is False:
            keys |= _value_keys(value, sub, prefix + key + ".")
    return keys


def test_schema_and_values_describe_the_same_keys():
    """A value without a schema entry would be rejected; a schema entry without a value is undocumented."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    # `global` is helm's.
    optional = {"global"}
    assert _value_keys(values, schema) == _schema_keys(schema) - optional
