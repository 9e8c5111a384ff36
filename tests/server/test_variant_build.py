"""`variants build` on a tiny random 2-layer BERT: every recipe, written atomically."""

from __future__ import annotations

import pytest
import torch

from forescale_server.variant_build import build_one, build_variants, parse_recipes, parse_student_layers
from forescale_server.variant_manifest import MANIFEST, RECIPES, read_manifest

from .variant_fixtures import tiny_context, tiny_teacher


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("variants")
    ctx = tiny_context(tiny_teacher(root / "teacher"))
    manifests = {m.name: m for m in build_variants(root / "out", list(RECIPES), ctx)}
    return root / "out", manifests, ctx


def test_every_recipe_leaves_exactly_one_finished_directory(built):
    out, manifests, _ = built
    assert sorted(p.name for p in out.iterdir()) == sorted(RECIPES)
    for name in RECIPES:
        assert read_manifest(out / name, teacher="tiny") == manifests[name]


@pytest.mark.parametrize("name, architecture, precision", [
    ("int8", "bert", "int8"), ("pruned", "bert-pruned", "fp32"), ("distilled", "bert", "fp32"),
    ("distilled-int8", "bert", "int8"), ("fused", "onnx", "fp32"),
])
def test_manifest_records_recipe_inputs_commit_and_quality(built, name, architecture, precision):
    _, manifests, ctx = built
    m = manifests[name]
    assert (m.recipe, m.architecture, m.precision, m.commit) == (name, architecture, precision, "test")
    assert m.inputs["train_sentences"] == len(ctx.train_texts) and m.inputs["eval_sentences"] == len(ctx.eval_texts)
    assert m.inputs["train_source"] != m.inputs["eval_source"]
    assert set(m.quality) == {"mean_cosine", "spearman", "eval_sentences"}
    assert -1.0 <= m.quality["mean_cosine"] <= 1.0


def test_pruned_manifest_names_the_removed_heads(built):
    _, manifests, _ = built
    m = manifests["pruned"]
    removed = sum(len(v) for v in m.pruned_heads.values())
    assert removed == round(0.2 * 8)  # 2 layers x 4 heads
    assert m.inputs["heads_after"] == [4 - len(m.pruned_heads.get(str(i), [])) for i in range(2)]


def test_fused_graph_gives_the_teachers_vectors(built):
    assert built[1]["fused"].quality["mean_cosine"] > 0.9999


def test_an_interrupted_build_leaves_no_variant(tmp_path):
    ctx = tiny_context(tiny_teacher(tmp_path / "teacher"))

    def explode(*_):
        raise KeyboardInterrupt

    (tmp_path / "out").mkdir()
    with pytest.raises(KeyboardInterrupt):
        build_one(ctx, tmp_path / "out", "distilled", recipes={"distilled": explode})
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("text, expected", [
    (None, list(RECIPES)), ("int8", ["int8"]), ("fused, pruned,fused", ["fused", "pruned"]),
])
def test_parse_recipes(text, expected):
    assert parse_recipes(text) == expected


@pytest.mark.parametrize("text", ["int4", "int8,magic", ","])
def test_unknown_recipes_are_refused(text):
    with pytest.raises(ValueError, match="unknown recipe"):
        parse_recipes(text)


@pytest.mark.parametrize("text, expected", [
    ("0,2,4,5", (0, 2, 4, 5)), (" 5 ", (5,)), ("0, 1", (0, 1)),
    ("", "comma list"), ("0,,5", "comma list"), ("0,two", "two is not a layer index"),
    ("0,6", "layers 0 to 5, not 6"), ("-1,2", "not -1"), ("2,2", "each layer once"), ("4,2", "in increasing order"),
])
def test_student_layers(text, expected):
    if isinstance(expected, tuple):
        assert parse_student_layers(text, 6) == expected
    else:
        with pytest.raises(ValueError, match=expected) as err:
            parse_student_layers(text, 6)
        assert "--student-layers" in str(err.value)


def test_pruned_variant_has_fewer_parameters(built):
    from forescale_server.variant_loading import load_variant_model

    out, manifests, ctx = built
    from transformers import AutoModel

    teacher = AutoModel.from_pretrained(str(ctx.teacher_dir), add_pooling_layer=False)
    pruned = load_variant_model(out / "pruned", manifests["pruned"])
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(pruned) < count(teacher)
    assert not any(torch.isnan(p).any() for p in pruned.parameters())
    assert (out / "pruned" / MANIFEST).is_file()


def test_a_killed_builds_leftover_is_removed_by_the_next_build(tmp_path):
    out = tmp_path / "out"
    dead = out / ".int8.partial-999999999"  # no such process
    dead.mkdir(parents=True)
    (dead / "model.safetensors").write_bytes(b"half")
    ctx = tiny_context(tiny_teacher(tmp_path / "teacher"))
    build_one(ctx, out, "int8")
    assert sorted(p.name for p in out.iterdir()) == ["int8"]
