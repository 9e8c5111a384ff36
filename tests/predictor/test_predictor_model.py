import io

import numpy as np
import pytest
import torch

from forescale_predictor.errors import ModelFormatError
from forescale_predictor.lstm_module import LSTMForecastNet, pinball_loss
from forescale_predictor.model_config import ModelConfig
from forescale_predictor import model_file
from forescale_predictor.trained_model import build_net


@pytest.mark.parametrize(("inputs", "targets", "horizon", "quantiles"), [(2, 2, 12, 3), (1, 1, 3, 2), (4, 2, 6, 1)])
def test_net_output_shape(inputs, targets, horizon, quantiles):
    net = LSTMForecastNet(inputs=inputs, targets=targets, horizon=horizon, quantiles=quantiles, hidden=8, ar_steps=4,
                          target_index=tuple(range(targets)))
    out = net(torch.randn(5, 10, inputs))
    assert out.shape == (5, quantiles, horizon, targets)


def test_quantiles_never_cross():
    net = LSTMForecastNet(inputs=2, targets=2, horizon=4, quantiles=3, hidden=8, ar_steps=4)
    for p in net.parameters():
        torch.nn.init.normal_(p)
    out = net(torch.randn(50, 10, 2))
    assert (out[:, 1] >= out[:, 0]).all() and (out[:, 2] >= out[:, 1]).all()


def test_untrained_model_forecasts_the_last_value(tiny_model):
    config = tiny_model.config
    fresh = type(tiny_model)(config, build_net(config), tiny_model.input_scaler, tiny_model.target_scaler, np.ones(2))
    fresh.target_scaler = type(tiny_model.target_scaler)(np.zeros(2), np.ones(2))
    windows = np.random.default_rng(0).uniform(10, 20, size=(3, config.lookback, 2))
    pred = fresh.predict_windows(windows)
    median = pred[:, config.quantiles.index(0.5)]
    assert np.allclose(median, windows[:, -1:, :])


def test_pinball_loss_is_asymmetric():
    q = torch.tensor([0.9])
    target = torch.zeros(1, 1, 1)
    under = pinball_loss(torch.full((1, 1, 1, 1), -1.0), target, q)
    over = pinball_loss(torch.full((1, 1, 1, 1), 1.0), target, q)
    assert float(under) == pytest.approx(0.9) and float(over) == pytest.approx(0.1)


def test_save_load_round_trip(tiny_model, tmp_path):
    path = model_file.save(tiny_model, tmp_path / "m.pt")
    loaded = model_file.load(path)
    assert loaded.config == tiny_model.config
    windows = np.random.default_rng(1).uniform(10, 20, size=(4, tiny_model.config.lookback, 2))
    assert np.allclose(loaded.predict_windows(windows), tiny_model.predict_windows(windows))
    assert loaded.metadata["train_windows"] == tiny_model.metadata["train_windows"]
    assert model_file.load(path.read_bytes()).config == tiny_model.config


def _payload(model) -> dict:
    return torch.load(io.BytesIO(model_file.to_bytes(model)), weights_only=True)


def _bytes(payload) -> bytes:
    buf = io.BytesIO()
    torch.save(payload, buf)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda p: p.update(version=99), "format version 99"),
        (lambda p: p.update(format="something-else"), "not a Forescale forecaster model"),
        (lambda p: p["config"].update(hidden=64), "does not match"),
        (lambda p: p["scalers"]["input"].update(mean=[0.0]), "scaler sizes"),
        (lambda p: p.update(shrink=[1.0, 1.0, 1.0]), "shrink has 3 values"),
        (lambda p: p.pop("state_dict"), "damaged"),
    ],
    ids=["newer-version", "foreign-format", "shape-mismatch", "scaler-size", "shrink-size", "no-weights"],
)
def test_version_and_shape_checks(tiny_model, mutate, message):
    payload = _payload(tiny_model)
    mutate(payload)
    with pytest.raises(ModelFormatError, match=message):
        model_file.load(_bytes(payload))


@pytest.mark.parametrize(
    "content",
    [b"", b"this is not a model", b"PK\x03\x04garbage", _bytes({"a": 1}), _bytes([1, 2, 3])],
    ids=["empty", "text", "broken-zip", "other-dict", "list"],
)
def test_a_file_that_is_not_a_model(content):
    with pytest.raises(ModelFormatError) as info:
        model_file.load(content)
    assert "model" in str(info.value)


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_pickled_code_is_refused(tmp_path):
    """weights_only loading refuses arbitrary objects (a ConfigMap cannot run code)."""
    import pickle

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    path = tmp_path / "evil.pt"
    with path.open("wb") as handle:
        pickle.dump({"format": "forescale-forecaster", "x": Evil()}, handle)
    with pytest.raises(ModelFormatError):
        model_file.load(path)


def test_config_validation():
    with pytest.raises(ValueError, match="median"):
        ModelConfig(quantiles=(0.1, 0.9))
    with pytest.raises(ValueError, match="not among the features"):
        ModelConfig(features=("rate",), targets=("latency_ms",))
