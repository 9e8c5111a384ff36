"""`--spec` and `--set` fields against the InferenceDeployment CRD's schema."""

from __future__ import annotations

import pytest

from forescale_sim.spec_file import spec_schema, unknown_field


@pytest.mark.parametrize("path, why", [
    ("traffic.overloadMaxPercent", None),
    ("pools.b.costWeight", None),
    ("emergency.cutback", "emergency has no field 'cutback'"),  # cutback is traffic's
    ("traffic.cutback.stepPercnt", "traffic.cutback has no field 'stepPercnt'"),
    ("pools.a.template.metadata.labels.team", None),  # the pod template is the user's: the schema leaves it open
    ("pools.c.minReplicas", "pools has no field 'c' (it has a, b)"),
    ("warmReservePercent.x", None),  # a scalar: --set reports the path crossing it when it applies the value
])
def test_a_path_the_spec_has_no_place_for_is_named_with_its_neighbours(path, why):
    found = unknown_field(tuple(path.split(".")))
    assert found is None if why is None else why in found


def test_without_the_crd_beside_the_package_no_field_is_refused(tmp_path):
    """An install from a wheel has no crds/: the replay still runs, with the spec parser's checks alone."""
    schema = spec_schema(tmp_path / "absent.yaml")
    assert schema == {} and unknown_field(("traffic", "overloadMaxPrcent"), schema) is None
