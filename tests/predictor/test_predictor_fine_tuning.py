"""Fine-tuning on a service's own history: nothing after the split is seen, the base is kept when it is better,
and too little history is one clear error."""

import numpy as np
import pytest
import torch

from forescale_predictor import History, LATENCY_MS, RATE, load_forecaster
from forescale_predictor.fine_tuning import NotEnoughHistory, fine_tune
from forescale_predictor.model_file import to_bytes
from forescale_predictor.training import TrainOptions

from predictor_fixtures import synthetic

FAST = TrainOptions(max_epochs=2, windows_per_epoch=256, min_windows_per_epoch=256, progress=False)


def service(n=600, seed=0) -> History:
    t, values = synthetic(n, seed=seed)
    return History(15.0, t, {LATENCY_MS: values[:, 0].copy(), RATE: values[:, 1].copy()})


def _state(model):
    return {k: v.clone() for k, v in model.net.state_dict().items()}


def test_nothing_after_the_split_is_seen():
    base = load_forecaster().model
    history = service()
    split = float(history.times[400])
    first = fine_tune(base, history, until=split, options=FAST)
    changed = service()
    for name in (LATENCY_MS, RATE):
        changed.features[name][400:] = changed.features[name][400:] * 50 + 7  # anything at all after the split
    second = fine_tune(base, changed, until=split, options=FAST)
    for key, value in _state(first).items():
        assert torch.equal(value, second.net.state_dict()[key]), key
    np.testing.assert_array_equal(first.shrink, second.shrink)
    np.testing.assert_array_equal(first.smooth_weight, second.smooth_weight)
    assert first.metadata["training_span"]["end"] < split
    # and the data before the split does matter (the test would pass vacuously otherwise)
    earlier = service()
    earlier.features[RATE][100:300] *= 3
    third = fine_tune(base, earlier, until=split, options=FAST)
    assert any(not torch.equal(v, third.net.state_dict()[k]) for k, v in _state(first).items())


def test_fine_tuning_keeps_the_base_contract_and_never_loses_to_it_on_validation():
    base = load_forecaster().model
    tuned = fine_tune(base, service(), options=FAST)
    assert tuned.config == base.config
    np.testing.assert_array_equal(tuned.input_scaler.mean, base.input_scaler.mean)
    history = tuned.metadata["loss_history"]
    assert tuned.metadata["best_epoch"] == 0 or min(h["valid_loss"] for h in history) <= history[0]["valid_loss"]
    assert load_forecaster(to_bytes(tuned)).config == base.config


@pytest.mark.parametrize("n, message", [
    (10, "10 points of 15 s; fine-tuning needs at least 28"),
    (27, "27 points of 15 s; fine-tuning needs at least 28"),
])
def test_fewer_points_than_one_window_is_one_clear_error(n, message):
    with pytest.raises(NotEnoughHistory, match=message):
        fine_tune(load_forecaster().model, service(n), options=FAST)


def test_a_missing_feature_is_named():
    history = service()
    history.features[LATENCY_MS][:] = np.nan
    with pytest.raises(Exception, match="the history has no latency_ms"):
        fine_tune(load_forecaster().model, history, options=FAST)
