"""The --incidents spec language and the default incident."""

from __future__ import annotations

import pytest

from forescale_sim.errors import IncidentSpecError
from forescale_sim.incidents import Incident, default_incidents, parse_incidents

GOOD = [
    ("slowdown:pool=a,factor=2.5,start=1200,seconds=300", [Incident("slowdown", "a", 1200, factor=2.5, seconds=300)]),
    ("crash:pool=a,pods=1,start=2000", [Incident("crash", "a", 2000, pods=1)]),
    ("crash:start=50;slowdown:start=10", [Incident("slowdown", "a", 10, factor=2.5, seconds=300), Incident("crash", "a", 50, pods=1)]),
    ("slowdown:pool=b,factor=3,start=0,seconds=60; ", [Incident("slowdown", "b", 0, factor=3, seconds=60)]),
    ("none", []),
    ("", []),
]


@pytest.mark.parametrize("spec,expected", GOOD)
def test_parse(spec: str, expected: list[Incident]) -> None:
    assert parse_incidents(spec) == expected


BAD = [
    ("explode:start=1", "unknown kind 'explode'"),
    ("slowdown", "missing start"),
    ("slowdown:start", "is not key=value"),
    ("slowdown:start=abc", "start='abc' is not a number"),
    ("slowdown:start=10,speed=2", "unknown key(s) speed"),
    ("slowdown:start=10,pool=c", "pool must be a or b"),
    ("slowdown:start=-5", "start must be >= 0"),
    ("slowdown:start=5,factor=0", "factor and seconds must be > 0"),
    ("crash:start=5,pods=1.5", "pods must be a whole number"),
    ("crash:start=inf", "must be finite"),
]


@pytest.mark.parametrize("spec,words", BAD)
def test_bad_spec_names_the_problem(spec: str, words: str) -> None:
    with pytest.raises(IncidentSpecError) as err:
        parse_incidents(spec)
    assert words in str(err.value)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_default_is_a_slowdown_in_the_middle_third(seed: int) -> None:
    (inc,) = default_incidents(3600, seed)
    assert (inc.kind, inc.pool, inc.factor, inc.seconds) == ("slowdown", "a", 2.5, 300)
    assert 1200 <= inc.start < 2400
    assert default_incidents(3600, seed) == [inc]  # seeded


def test_json_form_matches_design() -> None:
    assert Incident("slowdown", "a", 1200, factor=2.5, seconds=300).to_dict() == {
        "kind": "slowdown", "pool": "a", "factor": 2.5, "start": 1200, "seconds": 300}
