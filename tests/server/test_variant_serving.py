"""`forescale serve --model-path`: a built variant is served, says which it is,
switches precision on top, and bad variant directories are refused at load."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from forescale_server.backend import make_backend
from forescale_server.cli import app
from forescale_server.variant_build import build_variants
from forescale_server.variant_manifest import MANIFEST, read_manifest

from .conftest import AUTH, serving
from .variant_fixtures import EVAL, tiny_context, tiny_teacher


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    build_variants(root / "out", ["distilled", "pruned"], tiny_context(tiny_teacher(root / "teacher")))
    return root / "out"


@pytest.mark.parametrize("name", ["distilled", "pruned"])
async def test_a_variant_is_served_and_says_which_it_is(variants, name):
    manifest = read_manifest(variants / name, teacher="tiny")
    backend = make_backend("tiny", "fp32", None, device="cpu", threads=1, variant=manifest, variant_dir=variants / name)
    async with serving(backend) as (client, server):
        r = await client.post("/v1/embeddings", json={"input": EVAL[:3], "model": "tiny"})
        assert r.status == 200
        vectors = [d["embedding"] for d in (await r.json())["data"]]
        assert len(vectors) == 3 and len(vectors[0]) == 32
        ready = await (await client.get("/readyz")).json()
        assert ready["variant"] == name
        info = await (await client.post("/admin/model", json={}, headers=AUTH)).json()
        assert info["variant"]["variant"] == name and info["variant"]["recipe"] == name
        assert info["variant"]["built_quality"] == manifest.quality
        assert info["served_bytes"] > 0
        metrics = await (await client.get("/metrics")).text()
        assert f'variant="{name}"' in metrics and "forescale_model_variant_info" in metrics
        # the runtime precision switch works on top of the variant
        switched = await (await client.post("/admin/precision", json={"precision": "int8"}, headers=AUTH)).json()
        assert switched["precision"] == "int8" and switched["variant"] == name
        assert switched["agreement"] > 0.9
        r = await client.post("/v1/embeddings", json={"input": EVAL[:2]})
        assert r.status == 200
        metrics = await (await client.get("/metrics")).text()
        assert [l for l in metrics.splitlines() if l.startswith("forescale_model_variant_info{")] == [
            f'forescale_model_variant_info{{deployment="chat",pool="b",precision="int8",recipe="{name}",teacher="tiny",variant="{name}"}} 1.0']


def _copy(variants, tmp_path, name="distilled"):
    target = tmp_path / name
    shutil.copytree(variants / name, target)
    return target


def _truncate_weights(path):
    (path / "model.safetensors").write_bytes(b"half")
    return path / "model.safetensors"


def _remove_manifest(path):
    (path / MANIFEST).unlink()
    return path / MANIFEST


def _other_teacher(path):
    data = json.loads((path / MANIFEST).read_text())
    data["teacher"] = "minilm"
    (path / MANIFEST).write_text(json.dumps(data))
    return path / MANIFEST


@pytest.mark.parametrize("damage, message", [
    (_truncate_weights, "does not match the SHA-256"),
    (_remove_manifest, "not a finished variant"),
    (_other_teacher, "built from model 'minilm', not 'tiny'"),
])
def test_bad_variant_directories_are_refused_at_load_naming_the_file(variants, tmp_path, damage, message):
    path = _copy(variants, tmp_path)
    named = damage(path)
    result = CliRunner().invoke(app, ["--model", "tiny", "--model-path", str(path)])
    assert result.exit_code == 2
    assert message in result.output and str(named) in result.output
    assert "Traceback" not in result.output


def test_a_missing_variant_directory_is_refused(tmp_path):
    result = CliRunner().invoke(app, ["--model-path", str(tmp_path / "none")])
    assert result.exit_code == 2 and "no such variant directory" in result.output


def test_model_path_with_emulation_is_refused(variants):
    result = CliRunner().invoke(app, ["--model", "tiny", "--model-path", str(variants / "distilled"), "--emulate-gpu", "demo"])
    assert result.exit_code == 2 and "--emulate-gpu" in result.output
