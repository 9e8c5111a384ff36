"""The saved-model format: one torch file, loaded with `weights_only=True`.

The file is a dict of plain types and tensors:

    format      "forescale-forecaster"
    version     FORMAT_VERSION (a reader refuses newer major versions)
    config      ModelConfig.to_dict(): features, targets, step, lookback,
                horizon, quantiles, network sizes
    state_dict  the network's weights
    scalers     {"input": {"mean", "scale"}, "target": {"mean", "scale"}}
    shrink      per-target weight of the network's median (trained_model.py)
    blend       per-target smooth_weight and smooth_alpha of the EWM term
    metadata    training data span and sources, validation metrics, epochs,
                created_at, torch version: what the model was trained on

Nothing is unpickled beyond tensors and plain containers, so loading a file
from a ConfigMap cannot run code.
"""

from __future__ import annotations

import io
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .errors import ModelFormatError
from .model_config import ModelConfig
from .scaling import Standardiser
from .trained_model import TrainedModel, build_net

FORMAT = "forescale-forecaster"
FORMAT_VERSION = 1


def to_bytes(model: TrainedModel) -> bytes:
    """The model file's content."""
    payload = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "config": model.config.to_dict(),
        "state_dict": {k: v.detach().clone() for k, v in model.net.state_dict().items()},
        "scalers": {
            "input": {"mean": model.input_scaler.mean.tolist(), "scale": model.input_scaler.scale.tolist()},
            "target": {"mean": model.target_scaler.mean.tolist(), "scale": model.target_scaler.scale.tolist()},
        },
        "shrink": [float(s) for s in model.shrink],
        "blend": {"smooth_weight": [float(s) for s in model.smooth_weight], "smooth_alpha": [float(s) for s in model.smooth_alpha]},
        "metadata": {"created_at": time.time(), "torch": str(torch.__version__), **_plain(model.metadata)},
    }
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


def save(model: TrainedModel, path: str | Path) -> Path:
    """Write the model to `path` (parents created) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(to_bytes(model))
    return path


def load(source: str | Path | bytes, *, name: str | None = None) -> TrainedModel:
    """Read a model from a path or from a file's bytes; ModelFormatError on anything else."""
    label = name or ("<bytes>" if isinstance(source, (bytes, bytearray)) else str(source))
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    else:
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise ModelFormatError(f"cannot read model file {label}: {exc.strerror or exc}") from None
    if not data:
        raise ModelFormatError(f"{label} is empty, not a Forescale model file")
    try:
        payload = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except (RuntimeError, EOFError, ValueError, zipfile.BadZipFile, OSError, AttributeError, ImportError) as exc:
        raise ModelFormatError(f"{label} is not a Forescale model file (torch could not read it: {_short(exc)})") from None
    except Exception as exc:  # the unpickler raises its own types for foreign objects
        raise ModelFormatError(f"{label} is not a Forescale model file ({type(exc).__name__}: {_short(exc)})") from None
    return _from_payload(payload, label)


def _from_payload(payload: Any, label: str) -> TrainedModel:
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ModelFormatError(f"{label} is a torch file but not a Forescale forecaster model (no format marker {FORMAT!r})")
    version = payload.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise ModelFormatError(f"{label} has model format version {version!r}; this Forescale reads versions 1..{FORMAT_VERSION}")
    try:
        config = ModelConfig.from_dict(dict(payload["config"]))
        # The weights must have the shapes the config claims before the net is built from it: a
        # 31 KB file claiming hidden=6000 allocated about 580 MB first. On the meta device the
        # net has shapes but no memory.
        with torch.device("meta"):
            wanted = {k: tuple(v.shape) for k, v in build_net(config).state_dict().items()}
        held = {k: tuple(getattr(v, "shape", ())) for k, v in dict(payload["state_dict"]).items()}
        if held != wanted:
            wrong = sorted(k for k in wanted.keys() | held.keys() if wanted.get(k) != held.get(k))
            raise ValueError(f"the weights do not have the shapes the config claims (first: {wrong[0]} is "
                             f"{list(held.get(wrong[0], ()))}, the config needs {list(wanted.get(wrong[0], ()))})")
        net = build_net(config)
        net.load_state_dict(payload["state_dict"], strict=True)
        scalers = payload["scalers"]
        input_scaler = Standardiser(np.asarray(scalers["input"]["mean"], float), np.asarray(scalers["input"]["scale"], float))
        target_scaler = Standardiser(np.asarray(scalers["target"]["mean"], float), np.asarray(scalers["target"]["scale"], float))
        shrink = np.asarray(payload["shrink"], dtype=np.float64)
        blend = payload.get("blend") or {}
        smooth_weight = np.asarray(blend.get("smooth_weight", np.zeros(len(config.targets))), dtype=np.float64)
        smooth_alpha = np.asarray(blend.get("smooth_alpha", np.full(len(config.targets), 0.3)), dtype=np.float64)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise ModelFormatError(f"{label}: model file is damaged or does not match its own config ({_short(exc)})") from None
    if input_scaler.mean.shape != (len(config.features),) or target_scaler.mean.shape != (len(config.targets),):
        raise ModelFormatError(f"{label}: scaler sizes do not match the features {list(config.features)} and targets {list(config.targets)}")
    for key, arr in (("shrink", shrink), ("smooth_weight", smooth_weight), ("smooth_alpha", smooth_alpha)):
        if arr.shape != (len(config.targets),):
            raise ModelFormatError(f"{label}: {key} has {arr.size} values for {len(config.targets)} targets")
    return TrainedModel(config, net, input_scaler, target_scaler, shrink, smooth_weight, smooth_alpha, metadata=dict(payload.get("metadata") or {}))


def _plain(value: Any) -> Any:
    """Metadata reduced to types `weights_only` loading accepts."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]
