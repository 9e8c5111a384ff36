"""Kubernetes timestamps as epoch seconds (kube/timestamps.py), one parser for the operator and the bench."""

import pytest

from forescale_operator.kube.timestamps import epoch_seconds


@pytest.mark.parametrize("text, seconds", [
    ("1970-01-01T00:00:10Z", 10.0),
    ("2026-12-03T10:00:00.500000Z", 1796292000.5),  # MicroTime, as Leases and events write it
    ("1970-01-01T01:00:00+01:00", 0.0),
    (None, None), ("", None), ("yesterday", None), (12, None),
])
def test_epoch_seconds(text, seconds):
    assert epoch_seconds(text) == seconds
