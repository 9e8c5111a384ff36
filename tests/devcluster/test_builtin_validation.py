"""Built-in kinds are checked with a validator built once per kind; its verdicts are the package's own."""

from __future__ import annotations

import pytest

from forescale_devcluster.builtin_validation import _version, builtin_errors

kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is not installed")


def _package_says(obj) -> list[str]:
    try:
        kubernetes_validate.validate(dict(obj), _version(), strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{'.'.join(str(p) for p in exc.path) or '(root)'}: {exc.message}"]
    return []


@pytest.mark.parametrize("obj, expected", [
    ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, "spec": {"ports": [{"port": 80}]}}, []),
    ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, "spec": {"ports": [{"port": "x"}]}},
     ["spec.ports.0.port: 'x' is not of type 'integer'"]),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
      "spec": {"replicas": "2", "selector": {}, "template": {}}}, ["spec.replicas: '2' is not of type 'integer', 'null'"]),
    ({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "x"}, "involvedObject": {}, "reasonX": "a"},
     ["(root): Additional properties are not allowed ('reasonX' was unexpected)"]),
    ({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "x"}, "spec": {"holderIdentity": 3}},
     ["spec.holderIdentity: 3 is not of type 'string', 'null'"]),
])
def test_the_cached_validator_says_what_the_package_says(obj, expected):
    assert builtin_errors(obj["kind"], obj) == expected == _package_says(obj)
    assert builtin_errors(obj["kind"], obj) == expected  # the second call, from the cached validator
