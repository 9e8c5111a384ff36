"""Loading a built variant's model for serving (the manifest is checked first,
by `variant_manifest.read_manifest`)."""

from __future__ import annotations

from pathlib import Path

from .variant_manifest import VariantError, VariantManifest


def load_variant_model(directory: Path, manifest: VariantManifest, threads: int = 0):
    """The variant's fp32 model, in eval mode on the CPU."""
    directory = Path(directory)
    if manifest.architecture == "onnx":
        from .onnx_graph import ONNX_FILE, OnnxEncoder

        return OnnxEncoder(directory / ONNX_FILE, threads)
    from transformers import AutoConfig, AutoModel

    if manifest.architecture == "bert":
        return AutoModel.from_pretrained(str(directory), add_pooling_layer=False).eval()
    # bert-pruned: the config describes the unpruned shape; remove the heads, then load.
    from safetensors.torch import load_file

    from .head_pruning import prune_heads

    model = AutoModel.from_config(AutoConfig.from_pretrained(str(directory)), add_pooling_layer=False)
    prune_heads(model, {int(k): v for k, v in manifest.pruned_heads.items()})
    weights = directory / "model.safetensors"
    state = load_file(str(weights))
    result = model.load_state_dict(state, strict=False)
    if result.missing_keys or result.unexpected_keys:
        raise VariantError(f"{weights} does not fit the pruned shape in {directory / 'variant.json'}: "
                           f"missing {result.missing_keys[:3]}, unexpected {result.unexpected_keys[:3]}")
    return model.eval()
