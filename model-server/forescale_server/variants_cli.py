"""`forescale variants build|report`."""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(add_completion=False, rich_markup_mode=None, help="Build and measure lighter variants of the served encoder.")


def _fail(message: str) -> None:
    typer.echo(f"forescale variants: {message}", err=True)
    raise typer.Exit(2)


@app.command()
def build(
    out: Path = typer.Option(..., "--out", help="Directory that receives one sub-directory per variant."),
    model: str = typer.Option("minilm", help="The teacher: 'minilm' (all-MiniLM-L6-v2, bundled) or a local BERT-style model directory."),
    recipes: Optional[str] = typer.Option(None, help="Comma-separated: int8, pruned, distilled, distilled-int8, fused (default: all)."),
    threads: int = typer.Option(0, help="torch CPU threads (0: torch's default)."),
    train_sentences: int = typer.Option(0, help="Use the first N training sentences of the seeded mix of news and docstrings (0: all, about 69,000)."),
    prune_epochs: int = typer.Option(2, help="Fine-tuning epochs after head pruning."),
    distill_epochs: int = typer.Option(2, help="Distillation epochs."),
    student_layers: Optional[str] = typer.Option(None, help="Teacher layers the distilled student starts from, comma-separated in increasing order (default 0,2,4,5 for a six-layer teacher; docs/model-server.md)."),
    seed: int = typer.Option(0, help="Seed of every random choice."),
) -> None:
    """Build the variants into OUT/<recipe>/ (each with variant.json)."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    from .backend import MINILM_ALIASES
    from .variant_build import parse_recipes

    try:
        names = parse_recipes(recipes)
    except ValueError as exc:
        _fail(str(exc))
    if out.exists() and not out.is_dir():
        _fail(f"--out {out} exists and is not a directory")
    for name, value in (("--prune-epochs", prune_epochs), ("--distill-epochs", distill_epochs)):
        if value < 1:
            _fail(f"{name} must be >= 1, got {value}")
    if train_sentences < 0:
        _fail(f"--train-sentences must be >= 0, got {train_sentences}")
    if threads < 0:
        _fail(f"--threads must be >= 0 (0: torch's default), got {threads}")

    import torch

    from .model_files import minilm_dir
    from .variant_build import TRAINED_RECIPES, BuildContext, BuildSettings, build_variants, git_commit, parse_student_layers
    from .variant_text import EVAL_SOURCE, TRAIN_SOURCE, eval_sentences, training_sentences

    if threads:
        torch.set_num_threads(threads)
    # SIGTERM becomes SystemExit, so the temporary directory of the variant being built is removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        teacher_dir = minilm_dir() if model in MINILM_ALIASES else Path(model)
        if not (teacher_dir / "config.json").is_file() or not (teacher_dir / "tokenizer.json").is_file():
            raise ValueError(f"--model {model!r}: expected 'minilm' or a directory with config.json and tokenizer.json")
        depth = int(json.loads((teacher_dir / "config.json").read_text()).get("num_hidden_layers", 0))
        # the default is checked too: it is MiniLM's, and another teacher may be shallower
        layers = parse_student_layers(student_layers or ",".join(map(str, BuildSettings.student_layers)), depth)
        # Read from the packages' docstrings (about a minute of parsing): only for a recipe that trains.
        trained = [n for n in names if n in TRAINED_RECIPES]
        texts = training_sentences(train_sentences or None) if trained else []
    except ValueError as exc:
        _fail(str(exc))
    settings = BuildSettings(prune_epochs=prune_epochs, distill_epochs=distill_epochs, seed=seed, student_layers=layers)
    ctx = BuildContext(teacher_dir=teacher_dir, teacher_name="minilm" if model in MINILM_ALIASES else model, settings=settings,
                       train_texts=texts, eval_texts=eval_sentences(), train_source=TRAIN_SOURCE, eval_source=EVAL_SOURCE,
                       threads=threads, commit=git_commit())
    training = f"training {', '.join(trained)} on {len(texts)} sentences ({TRAIN_SOURCE}); " if trained else ""
    typer.echo(f"{training}evaluating on {len(ctx.eval_texts)} held-out sentences ({EVAL_SOURCE})", err=True)
    for manifest in build_variants(out, names, ctx, say=lambda line: typer.echo(line, err=True)):
        q = manifest.quality
        typer.echo(f"{manifest.name:<16} cos {q['mean_cosine']:.4f}  spearman {q['spearman']:.4f}  {manifest.build_seconds:.0f} s  -> {out / manifest.name}")


@app.command()
def report(
    directory: Path = typer.Argument(..., help="A directory built by `forescale variants build`."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON object on stdout."),
    rounds: int = typer.Option(3, help="Interleaved measuring rounds (best round kept)."),
    threads: int = typer.Option(1, help="torch/onnxruntime threads in every server."),
    model: str = typer.Option("minilm", help="The teacher the variants were built from."),
) -> None:
    """Serve the teacher and every variant side by side and measure them."""
    from .variant_report import ReportError, measure_report, render_table

    if rounds < 1:
        _fail(f"--rounds must be >= 1, got {rounds}")
    try:
        result = measure_report(directory, teacher=model, rounds=rounds, threads=threads, say=lambda line: typer.echo(line, err=True))
    except ReportError as exc:
        _fail(str(exc))
    typer.echo(json.dumps(result, indent=2) if as_json else render_table(result))
