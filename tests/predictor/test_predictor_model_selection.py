"""Model selection with hysteresis: the leader changes only past the margin, and says why."""

import numpy as np
import pytest

from forescale_predictor.model_selection import ModelSelector, select_backtest


def feed(selector, lstm_err, ewm_err, n):
    for _ in range(n):
        selector.record("lstm", "latency_ms", lstm_err)
        selector.record("ewm", "latency_ms", ewm_err)
    return selector.choose()


@pytest.mark.parametrize("lstm_err, ewm_err, n, leader", [
    (4.1, 4.6, 30, "lstm"),    # lstm ahead: stays
    (5.0, 4.0, 30, "ewm"),     # ewm 20% better: switches
    (4.1, 4.0, 30, "lstm"),    # ewm 2.5% better: inside the 5% margin, no switch
    (9.0, 1.0, 10, "lstm"),    # not enough scores yet
])
def test_switch_only_past_the_margin(lstm_err, ewm_err, n, leader):
    assert feed(ModelSelector(), lstm_err, ewm_err, n) == leader


def test_hysteresis_holds_the_new_leader_through_a_near_tie():
    s = ModelSelector(window=40)
    assert feed(s, 5.0, 4.0, 40) == "ewm"
    # lstm becomes 3% better: within the margin, ewm stays leader
    assert feed(s, 3.88, 4.0, 40) == "ewm"
    # lstm becomes 20% better: back to lstm
    assert feed(s, 3.2, 4.0, 40) == "lstm"


@pytest.mark.parametrize("n, text", [
    (5, "lstm: not yet scored (5 of 20 horizon errors)"),
    (480, "lstm: rolling MAE 4.1 vs ewm 4.6 over 2 h"),
    (40, "lstm: rolling MAE 4.1 vs ewm 4.6 over 10 min"),
])
def test_reason_says_which_model_and_why(n, text):
    s = ModelSelector()
    feed(s, 4.1, 4.6, n)
    assert s.reason() == text


def test_two_targets_weigh_alike_whatever_their_units():
    s = ModelSelector(targets=("latency_ms", "rate"))
    for _ in range(30):
        s.record("lstm", "latency_ms", 400.0)   # 33% worse on latency (ms)...
        s.record("ewm", "latency_ms", 300.0)
        s.record("lstm", "rate", 0.5)           # ...but 2x better on rate (req/s)
        s.record("ewm", "rate", 1.0)
    assert s.choose() == "lstm"


def test_backtest_selection_only_sees_outcomes_already_known():
    at = np.arange(100)
    errors = {"lstm": np.full(100, 2.0), "ewm": np.full(100, 1.0)}
    chosen = select_backtest(errors, at, horizon=12, min_scores=5)
    # origin 16 is the first with 5 known outcomes (origins 0-4, known 12 steps later)
    assert (chosen[:16] == 0).all() and (chosen[16:] == 1).all()


@pytest.mark.parametrize("kwargs", [{"models": ("lstm", "lstm")}, {"margin": 1.0}, {"margin": -0.1}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        ModelSelector(**kwargs)
