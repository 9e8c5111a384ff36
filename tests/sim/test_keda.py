"""KEDA's activation and its generated HPA, against PEERS.md §2."""

from __future__ import annotations

import pytest

from forescale_sim.policies.keda import KedaPolicy

ACTIVATION = [
    # (minReplicaCount, current, value, seconds since last active) -> replicas after KEDA's poll
    (0, 0, 6.0, 0, 1),  # active (6 > 5) at zero: max(min, 1)
    (0, 0, 5.0, 0, 0),  # 5 is not > 5: the comparison is strict
    (0, 3, 0.0, 200, 3),  # inactive, cooldown 300 s not yet passed
    (0, 3, 0.0, 301, 0),  # inactive past the cooldown: to zero
    (1, 3, 0.0, 301, 3),  # minReplicaCount 1 never scales to zero
    (2, 1, 0.0, 0, 2),  # below min: raised to min
    (3, 0, 9.0, 0, 3),  # active at zero with minReplicaCount 3: max(3, 1)
]


@pytest.mark.parametrize("min_count,current,value,since,expected", ACTIVATION)
def test_operator_poll(min_count, current, value, since, expected) -> None:
    keda = KedaPolicy(target_per_pod=10.0, min_replica_count=min_count, activation_threshold=5.0)
    now = 1000.0
    keda.last_active = now - since
    assert keda.operator_poll(now, current, value) == expected


def test_generated_hpa_is_off_at_zero_and_divides_by_threshold() -> None:
    keda = KedaPolicy(target_per_pod=10.0, min_replica_count=0, max_replica_count=50)
    keda.normalizer.start(0.0, 2)
    assert keda.hpa_sync(15.0, 0, 80.0) == 0  # KEDA owns 0 <-> 1
    assert keda.hpa_sync(30.0, 2, 80.0) == 4  # ceil(80/10) = 8, limited to max(2 x 2, 4)
    assert keda.hpa_sync(45.0, 4, 80.0) == 8
    assert keda.hpa_sync(60.0, 8, 84.0) == 8  # 84/(10 x 8) = 1.05: within tolerance
