"""The manifest round-trips, and bad variant directories are refused naming the file."""

from __future__ import annotations

import json

import pytest

from forescale_server.variant_manifest import MANIFEST, VariantError, VariantManifest, hash_files, read_manifest, write_manifest


def make_variant(path, teacher="minilm", **overrides):
    path.mkdir(parents=True, exist_ok=True)
    (path / "model.safetensors").write_bytes(b"weights" * 100)
    (path / "config.json").write_text('{"hidden_size": 8}')
    fields = dict(name="pruned", recipe="pruned", teacher=teacher, architecture="bert-pruned", precision="fp32",
                  files=hash_files(path), inputs={"train_sentences": 10, "split": "by source"}, commit="abc123",
                  quality={"mean_cosine": 0.99, "spearman": 0.98, "eval_sentences": 236}, pruned_heads={"0": [1, 2]},
                  int8_split=["encoder.layer.0.output.dense"], build_seconds=12.5)
    fields.update(overrides)
    manifest = VariantManifest(**fields)
    write_manifest(path, manifest)
    return manifest


def test_manifest_round_trips(tmp_path):
    written = make_variant(tmp_path / "v")
    read = read_manifest(tmp_path / "v", teacher="minilm")
    assert read == written
    assert not (tmp_path / "v" / (MANIFEST + ".tmp")).exists()


def _truncate(path):
    (path / "model.safetensors").write_bytes(b"weig")


def _drop_weights(path):
    (path / "model.safetensors").unlink()


def _drop_manifest(path):
    (path / MANIFEST).unlink()


def _garble_manifest(path):
    (path / MANIFEST).write_text("{not json")


def _unknown_recipe(path):
    data = json.loads((path / MANIFEST).read_text())
    data["recipe"] = "magic"
    (path / MANIFEST).write_text(json.dumps(data))


def _missing_key(path):
    data = json.loads((path / MANIFEST).read_text())
    del data["quality"]
    (path / MANIFEST).write_text(json.dumps(data))


@pytest.mark.parametrize("damage, file, message", [
    (_truncate, "model.safetensors", "does not match the SHA-256"),
    (_drop_weights, "model.safetensors", "is missing"),
    (_drop_manifest, MANIFEST, "not a finished variant"),
    (_garble_manifest, MANIFEST, "not valid JSON"),
    (_unknown_recipe, MANIFEST, "unknown recipe 'magic'"),
    (_missing_key, MANIFEST, "missing key"),
])
def test_damaged_variants_are_refused_naming_the_file(tmp_path, damage, file, message):
    make_variant(tmp_path / "v")
    damage(tmp_path / "v")
    with pytest.raises(VariantError, match=message) as err:
        read_manifest(tmp_path / "v", teacher="minilm")
    assert str(tmp_path / "v" / file) in str(err.value)


def test_a_variant_of_another_model_is_refused(tmp_path):
    make_variant(tmp_path / "v", teacher="bert-base")
    with pytest.raises(VariantError, match="built from model 'bert-base', not 'minilm'") as err:
        read_manifest(tmp_path / "v", teacher="minilm")
    assert MANIFEST in str(err.value)


def test_a_missing_directory_is_refused(tmp_path):
    with pytest.raises(VariantError, match="no such variant directory"):
        read_manifest(tmp_path / "nowhere")


def test_an_interrupted_build_directory_is_called_so(tmp_path):
    partial = tmp_path / ".distilled.partial-123"
    partial.mkdir()
    (partial / "model.safetensors").write_bytes(b"x")
    with pytest.raises(VariantError, match="interrupted build"):
        read_manifest(partial)
