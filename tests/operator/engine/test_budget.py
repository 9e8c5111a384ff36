"""Rule 2's stretch (budget.py): additive increase on ticks that tested it within the budget, a
multiplicative decrease from 1 on a tick over the budget at a tested load A was sized for, back to 1
on a tick over it past that load (an overload), never past the evidence nor under the floor."""

from __future__ import annotations

import pytest

from forescale_operator.engine.budget import DECREASE, FLOOR, SPEND_SHARE, STEP, TESTED_LOAD, Spend, ceiling, next_stretch

BUDGET = 0.01  # a p99 SLO


def spend(over=0.0, per_pod=95.0, capacity=100.0, top=1.5) -> Spend:
    return Spend(over_fraction=over, budget=BUDGET, per_pod_rps=per_pod, capacity_rps=capacity, ceiling=top)


@pytest.mark.parametrize("case, stretch, spent, tick, expected", [
    ("a tested tick within the budget raises it", 1.0, (), spend(), 1.0 + STEP),
    ("and keeps raising it", 1.2, (0.0,) * 5, spend(per_pod=TESTED_LOAD * 1.2 * 100.0), 1.2 + STEP),
    ("a lighter tick tests nothing", 1.2, (), spend(per_pod=TESTED_LOAD * 1.2 * 100.0 - 1.0), 1.2),
    ("a tick over the budget at a load past what A was sized for (an overload) resets it to 1", 1.3, (),
     spend(over=2 * BUDGET, per_pod=140.0), 1.0),
    ("at a light load it resets it to 1 too: the load tested nothing", 1.3, (), spend(over=2 * BUDGET, per_pod=50.0), 1.0),
    ("over the budget at a tested load A was sized for: the pods cannot hold it, 1 then the decrease", 1.3, (),
     spend(over=2 * BUDGET, per_pod=125.0), DECREASE),
    ("and again below 1", 0.9, (), spend(over=2 * BUDGET, per_pod=TESTED_LOAD * 0.9 * 100.0), 0.9 * DECREASE),
    ("an overload leaves a stretch below 1 where it is", 0.9, (), spend(over=2 * BUDGET, per_pod=95.0), 0.9),
    ("never under the floor", FLOOR, (), spend(over=2 * BUDGET, per_pod=FLOOR * 100.0), FLOOR),
    ("below 1, a tested tick within the budget raises it back", 0.9, (), spend(per_pod=90.0), 0.9 + STEP),
    ("a tick at the budget resets nothing, and raises nothing: its window spent all of it", 1.2, (),
     spend(over=BUDGET, per_pod=150.0), 1.2),
    ("the long window spent more than its share", 1.1,
     (SPEND_SHARE * BUDGET * 3,) * 3, spend(over=0.0), 1.1),
    ("never past the evidence", 1.495, (), spend(per_pod=150.0, top=1.5), 1.5),
    ("a ceiling under the stretch (new evidence) brings it down", 1.4, (), spend(top=1.2), 1.2),
    ("a tick over the budget at 1 and a tested load goes under 1", 1.0, (), spend(over=0.5, top=1.0), DECREASE),
])
def test_the_stretch_moves_as_the_budget_says(case, stretch, spent, tick, expected):
    got, _ = next_stretch(stretch, spent, tick, window=20)
    assert got == pytest.approx(expected), case


def test_the_window_keeps_the_last_ticks_oldest_first():
    spent: tuple[float, ...] = ()
    for i in range(25):
        _, spent = next_stretch(1.0, spent, spend(over=i / 1000.0), window=20)
    assert spent == tuple(i / 1000.0 for i in range(5, 25))


@pytest.mark.parametrize("evidence, capacity, expected", [
    (824.0, 450.0, 824.0 / 450.0),  # a pessimistic model: room up to the load test
    (50.0, 60.0, 1.0),  # the model already at or past the evidence: no room
    (50.0, 0.0, 1.0),  # no capacity at all (an unreachable target): no stretch
])
def test_the_ceiling_is_the_evidence_over_the_model(evidence, capacity, expected):
    assert ceiling(evidence, capacity) == pytest.approx(expected)
