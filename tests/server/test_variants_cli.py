"""`forescale variants build`: bad input is one line naming the flag, exit 2, before anything is trained or written."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from forescale_server.variants_cli import app

from .variant_fixtures import tiny_teacher


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    return tiny_teacher(tmp_path_factory.mktemp("teacher") / "tiny")  # two layers


@pytest.mark.parametrize("args, message", [
    (["--recipes", "int4"], "unknown recipe(s) int4"),
    (["--prune-epochs", "0"], "--prune-epochs must be >= 1, got 0"),
    (["--distill-epochs", "0"], "--distill-epochs must be >= 1, got 0"),
    (["--train-sentences", "-1"], "--train-sentences must be >= 0, got -1"),
    (["--threads", "-1"], "--threads must be >= 0 (0: torch's default), got -1"),
    (["--student-layers", "0,9"], "the teacher has layers 0 to 5, not 9"),
    (["--student-layers", "3,1"], "each layer once, in increasing order"),
    (["--student-layers", "0,x"], "x is not a layer index"),
    (["--model", "{teacher}"], "the teacher has layers 0 to 1, not 2"),  # the default is MiniLM's: named too
    (["--out", "{file}"], "exists and is not a directory"),
    (["--model", "{nothing}"], "expected 'minilm' or a directory with config.json and tokenizer.json"),
])
def test_bad_input_names_the_flag_and_writes_nothing(tmp_path, teacher, args, message):
    (tmp_path / "a-file").write_text("not a directory")
    args = [a.format(teacher=teacher, nothing=tmp_path / "nothing", file=tmp_path / "a-file") for a in args]
    result = CliRunner().invoke(app, ["build", "--out", str(tmp_path / "out"), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and result.output.startswith("forescale variants: ")
    assert not (tmp_path / "out").exists()


def test_a_recipe_that_trains_nothing_reads_no_training_sentences(tmp_path, teacher):
    """int8 quantizes the teacher as it is: the build neither reads the training sentences (a minute of
    parsing docstrings) nor runs the teacher over them, and its manifest says it trained on none."""
    import json

    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["build", "--out", str(out), "--model", str(teacher), "--student-layers", "0,1",
                                      "--recipes", "int8", "--threads", "1"])
    assert result.exit_code == 0, result.output
    assert "training" not in result.output and "evaluating on" in result.output
    assert json.loads((out / "int8" / "variant.json").read_text())["inputs"]["train_sentences"] == 0
