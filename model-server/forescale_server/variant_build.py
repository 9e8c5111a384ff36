"""`forescale variants build`: the lighter variants of an encoder.

Recipes (each a directory with a `variant.json` manifest):
- `int8`: the teacher's weights, served at the server's int8 precision;
- `pruned`: the 20% of attention heads with the lowest gradient sensitivity
  removed (`head_sensitivity`, `head_pruning`), then fine-tuned towards the
  teacher's embeddings;
- `distilled`: a 4-layer student initialised from teacher layers, trained on
  the distance between its embeddings and the teacher's;
- `distilled-int8`: the same student served at int8;
- `fused`: the teacher as an ONNX graph (constant folding) run by
  onnxruntime with operator fusion.

Each variant is built in a hidden temporary directory beside its final one
and renamed into place only once its manifest (written last) is there, so an
interrupted build leaves no directory a server would load. Quality is measured
by loading the finished directory through the server's own backend.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from .embedding_distill import (
    contrastive_loss,
    make_batches,
    mean_distance,
    pooled,
    student_from_teacher,
    teacher_targets,
    train_to_teacher,
)
from .embedding_quality import quality
from .head_pruning import heads_per_layer, prune_heads
from .head_sensitivity import head_sensitivity, lowest_heads
from .variant_manifest import RECIPES, VariantManifest, file_sha256, hash_files, write_manifest

log = logging.getLogger("forescale.variants")

#: teacher files that are not weights: copied into every variant so it is self-contained
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".onnx", ".h5", ".ot", ".msgpack")


@dataclass(frozen=True)
class BuildSettings:
    prune_fraction: float = 0.2
    sensitivity_batches: int = 8
    prune_epochs: int = 2
    prune_lr: float = 3e-5
    #: the pruned model scores and fine-tunes on the first this many training sentences: it keeps all six
    #: layers, so an epoch costs twice the student's. Measured, two epochs each (one torch thread): 14,000
    #: sentences took it to a Spearman of 0.977 (cosine 0.979) in 12 minutes, 28,000 to 0.982 (cosine
    #: 0.988) in 27, past the goal of 0.98; the other 41,000 would cost 40 minutes more
    prune_sentences: int = 28_000
    #: four of the teacher's six layers: the first, which turns the token embeddings into the states every later
    #: layer was trained on, the last two, which write the states the pooling reads, and one between. Why four:
    #: three stop short of the agreement pool B needs. Measured on the first 8,000 sentences, one epoch, lr 5e-4
    #: (held-out Spearman, 15th session): 0, 2, 4, 5 0.908; 0, 1, 4, 5 0.907; 1, 2, 4, 5 0.904; 0, 3, 4, 5 0.899;
    #: 0, 1, 3, 5 0.892; three layers: 0, 4, 5 0.863; 0, 2, 5 (the default until then) 0.849. Built in full
    #: (all sentences, two epochs): distilled-int8 Spearman 0.917 -> 0.938, mean cosine 0.940 -> 0.958, at
    #: 3.26x the fp32 teacher through the server at batch 32 beside the three layers' 3.88x, and 3.04-3.35x in
    #: two runs of bench.variants (docs/model-server.md, "A four-layer student"); trained without dropout
    #: since (`train_to_teacher`), 0.957 and 0.970, at 3.10-3.68x. `--student-layers` picks others (another
    #: teacher needs its own).
    student_layers: tuple[int, ...] = (0, 2, 4, 5)
    #: measured on the 69,373 sentences with the recipe before 6 December's (layers 1, 3, 5 at lr 2e-4): a
    #: mean cosine of 0.931 after one epoch, 0.941 after two (a third
    #: would add less than the second did, for another 9 minutes on two cores)
    distill_epochs: int = 2
    #: measured on the first 8,000 sentences, one epoch, layers 0, 2, 4, 5, trained without dropout
    #: (held-out Spearman): 1e-4 0.911, 2e-4 0.920, 3e-4 0.923, 5e-4 0.920, 1e-3 0.898. With dropout
    #: (layers 1, 3, 5) the best had been 5e-4
    distill_lr: float = 3e-4
    batch_size: int = 32
    max_train_len: int = 64
    seed: int = 0


@dataclass
class BuildContext:
    teacher_dir: Path
    teacher_name: str
    settings: BuildSettings
    train_texts: list[str]
    eval_texts: list[str]
    train_source: str
    eval_source: str
    threads: int = 0
    commit: str = "unknown"
    teacher: torch.nn.Module | None = None
    batches: list = field(default_factory=list)
    targets: list = field(default_factory=list)
    reference: object = None
    student: torch.nn.Module | None = None
    student_inputs: dict = field(default_factory=dict)


def git_commit() -> str:
    here = Path(__file__).resolve().parent
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (sha + ("+dirty" if dirty else "")) if sha else "unknown"


def parse_recipes(text: str | None) -> list[str]:
    if not text:
        return list(RECIPES)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in RECIPES]
    if unknown or not names:
        raise ValueError(f"unknown recipe(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(RECIPES)}")
    return list(dict.fromkeys(names))


def parse_student_layers(text: str, teacher_layers: int) -> tuple[int, ...]:
    """`--student-layers 0,2,4,5`: the teacher layers the student starts from, in increasing order (the order
    the student stacks them), each an index of the teacher's `teacher_layers`."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise ValueError(f"--student-layers {text!r}: expected a comma list of teacher layer indices, e.g. 0,2,4,5")
    bad = [p for p in parts if not p.lstrip("-").isdigit()]
    if bad:
        raise ValueError(f"--student-layers {text!r}: {', '.join(bad)} is not a layer index")
    layers = tuple(int(p) for p in parts)
    outside = [i for i in layers if not 0 <= i < teacher_layers]
    if outside:
        raise ValueError(f"--student-layers {text!r}: the teacher has layers 0 to {teacher_layers - 1}, "
                         f"not {', '.join(map(str, outside))}")
    if any(b <= a for a, b in zip(layers, layers[1:])):
        raise ValueError(f"--student-layers {text!r}: each layer once, in increasing order")
    return layers


def _copy_non_weights(src: Path, dst: Path) -> None:
    for p in src.iterdir():
        if p.is_file() and not p.name.endswith(_WEIGHT_SUFFIXES) and p.name != "README.md":
            shutil.copy2(p, dst / p.name)


def _tokenizer(teacher_dir: Path, max_len: int):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(teacher_dir / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_len)
    return tok


def _prepare(ctx: BuildContext) -> None:
    """The teacher and the eval reference (once per build); the training batches come with the first
    recipe that trains (`_teacher_batches`), so their teacher pass counts in that recipe's build time."""
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    from .encoder_backend import EncoderBackend

    if ctx.teacher is not None:
        return
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    torch.manual_seed(ctx.settings.seed)
    ctx.teacher = AutoModel.from_pretrained(str(ctx.teacher_dir), add_pooling_layer=False).eval()
    backend = EncoderBackend(ctx.teacher_dir, ctx.teacher_name, device="cpu", threads=ctx.threads)
    backend.load_sync()
    ctx.reference = backend.embed_texts(ctx.eval_texts).numpy()


def _teacher_batches(ctx: BuildContext, texts: list[str]) -> tuple[list, list]:
    """Training batches of `texts` and the teacher's target embeddings for them; the build's own
    (`ctx.batches`, made at the first recipe that trains) where `texts` is all its training text.
    Made up front, every build ran the teacher over all 69,000 sentences first, minutes on a CPU,
    though int8 and fused train nothing."""
    whole = len(texts) == len(ctx.train_texts)
    if ctx.batches and whole:
        return ctx.batches, ctx.targets
    batches = make_batches(_tokenizer(ctx.teacher_dir, ctx.settings.max_train_len), texts, ctx.settings.batch_size)
    targets = teacher_targets(ctx.teacher, batches)
    if whole:
        ctx.batches, ctx.targets = batches, targets
    return batches, targets


def _base_inputs(ctx: BuildContext) -> dict:
    weights = ctx.teacher_dir / "model.safetensors"
    return {
        "teacher": ctx.teacher_name,
        "teacher_weights_sha256": file_sha256(weights) if weights.is_file() else None,
        "train_source": ctx.train_source,
        "train_sentences": len(ctx.train_texts),
        "eval_source": ctx.eval_source,
        "eval_sentences": len(ctx.eval_texts),
        "split": "by source: training sentences come only from the training source, quality is measured only on the evaluation source",
        "seed": ctx.settings.seed,
    }


def _int8_split(model: torch.nn.Module, teacher_name: str, same_layers_as_teacher: bool) -> list[str]:
    from .backend import MINILM_ALIASES
    from .quantization import MINILM_SENSITIVE, default_sensitive

    if teacher_name in MINILM_ALIASES and same_layers_as_teacher:
        return list(MINILM_SENSITIVE)
    return default_sensitive(model)


def _save_state(model: torch.nn.Module, path: Path) -> None:
    from safetensors.torch import save_file

    save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(path))


def _recipe_int8(ctx: BuildContext, tmp: Path) -> dict:
    shutil.copy2(ctx.teacher_dir / "model.safetensors", tmp / "model.safetensors")
    return {"architecture": "bert", "precision": "int8", "int8_split": _int8_split(ctx.teacher, ctx.teacher_name, True),
            "inputs": {"recipe": "the teacher's fp32 weights; the server quantizes them at load (dynamic per-channel int8, outlier channels of the split layers fp32)"}}


def _pruned_sensitivity_loss(model, batch_and_target):
    batch, target = batch_and_target
    return contrastive_loss(pooled(model, batch), target)


def _recipe_pruned(ctx: BuildContext, tmp: Path) -> dict:
    import copy

    s = ctx.settings
    model = copy.deepcopy(ctx.teacher)
    texts = ctx.train_texts[:s.prune_sentences]
    batches, targets = _teacher_batches(ctx, texts)
    rng = random.Random(s.seed)
    picks = rng.sample(range(len(batches)), min(s.sensitivity_batches, len(batches)))
    scores = head_sensitivity(model, [(batches[i], targets[i]) for i in picks], _pruned_sensitivity_loss)
    chosen = lowest_heads(scores, s.prune_fraction)
    before = heads_per_layer(model)
    prune_heads(model, chosen)
    distance_before = mean_distance(model, batches, targets)
    history = train_to_teacher(model, batches, targets, s.prune_epochs, s.prune_lr, s.seed)
    _save_state(model, tmp / "model.safetensors")
    shutil.copy2(ctx.teacher_dir / "config.json", tmp / "config.json")  # the unpruned shape; the manifest says what to remove
    return {"architecture": "bert-pruned", "precision": "fp32", "pruned_heads": {str(k): v for k, v in chosen.items()},
            "int8_split": _int8_split(model, ctx.teacher_name, True),
            "inputs": {"prune_fraction": s.prune_fraction, "heads_before": before, "heads_after": heads_per_layer(model),
                       "sensitivity": "S_i = (1/N) sum_j |dL_j/dxi_i|, xi_i the gate on head i's output, L the in-batch contrastive loss to the teacher's embeddings",
                       "sensitivity_batches": len(picks), "sensitivity_scores": [[round(float(x), 6) for x in layer] for layer in scores],
                       "fine_tune": {"loss": "1 - cos(model, teacher) of mean-pooled embeddings", "epochs": s.prune_epochs, "lr": s.prune_lr,
                                     "train_sentences": len(texts),
                                     "batch_size": s.batch_size, "train_distance_after_pruning": round(distance_before, 6),
                                     "epoch_losses": [round(x, 6) for x in history]}}}


def _train_student(ctx: BuildContext) -> None:
    if ctx.student is not None:
        return
    s = ctx.settings
    student = student_from_teacher(ctx.teacher, list(s.student_layers))
    batches, targets = _teacher_batches(ctx, ctx.train_texts)
    distance_before = mean_distance(student, batches, targets)
    history = train_to_teacher(student, batches, targets, s.distill_epochs, s.distill_lr, s.seed)
    ctx.student = student
    ctx.student_inputs = {"student_layers_from_teacher": list(s.student_layers), "teacher_layers": len(ctx.teacher.encoder.layer),
                          "loss": "1 - cos(student, teacher) of mean-pooled embeddings", "epochs": s.distill_epochs, "lr": s.distill_lr,
                          "batch_size": s.batch_size, "train_distance_at_init": round(distance_before, 6),
                          "epoch_losses": [round(x, 6) for x in history]}


def _recipe_distilled(ctx: BuildContext, tmp: Path, precision: str = "fp32") -> dict:
    _train_student(ctx)
    ctx.student.save_pretrained(str(tmp), safe_serialization=True)
    return {"architecture": "bert", "precision": precision, "int8_split": _int8_split(ctx.student, ctx.teacher_name, False),
            "inputs": dict(ctx.student_inputs)}


def _recipe_distilled_int8(ctx: BuildContext, tmp: Path) -> dict:
    return _recipe_distilled(ctx, tmp, "int8")


def _recipe_fused(ctx: BuildContext, tmp: Path) -> dict:
    from .onnx_graph import ONNX_FILE, export_onnx

    export_onnx(ctx.teacher, tmp / ONNX_FILE)
    return {"architecture": "onnx", "precision": "fp32",
            "inputs": {"export": "torch.onnx.export(dynamo=False, opset 17, do_constant_folding=True): traced, constant folding, checked against torch", "runtime": "onnxruntime, ORT_ENABLE_ALL (operator fusion)"}}


#: the recipes that train on the teacher's embeddings of the training sentences (the others train nothing)
TRAINED_RECIPES = ("pruned", "distilled", "distilled-int8")

_RECIPES: dict[str, Callable[[BuildContext, Path], dict]] = {
    "int8": _recipe_int8, "pruned": _recipe_pruned, "distilled": _recipe_distilled,
    "distilled-int8": _recipe_distilled_int8, "fused": _recipe_fused,
}


def _measure(ctx: BuildContext, directory: Path, manifest: VariantManifest) -> dict:
    """Quality of the finished files, loaded the way the server loads them."""
    from .encoder_backend import EncoderBackend

    backend = EncoderBackend(directory, ctx.teacher_name, device="cpu", threads=ctx.threads, variant=manifest)
    backend.load_sync()
    backend.prepare_sync(manifest.precision)
    backend.activate_precision(manifest.precision)
    return quality(ctx.reference, backend.embed_texts(ctx.eval_texts).numpy())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale_partials(out: Path, recipe: str) -> None:
    """Temporary directories of builds that were killed (SIGKILL leaves them) or of this process."""
    for p in out.glob(f".{recipe}.partial-*"):
        pid = p.name.rsplit("-", 1)[-1]
        if pid.isdigit() and (int(pid) == os.getpid() or not _alive(int(pid))):
            shutil.rmtree(p, ignore_errors=True)


def build_one(ctx: BuildContext, out: Path, recipe: str, say: Callable[[str], None] = log.info,
              recipes: dict[str, Callable[[BuildContext, Path], dict]] | None = None) -> VariantManifest:
    """Build `recipe` into out/<recipe> through a temporary directory (`recipes`: the recipe functions)."""
    _prepare(ctx)
    final = out / recipe
    _remove_stale_partials(out, recipe)
    tmp = out / f".{recipe}.partial-{os.getpid()}"
    tmp.mkdir(parents=True)
    started = time.perf_counter()
    try:
        _copy_non_weights(ctx.teacher_dir, tmp)
        made = (recipes or _RECIPES)[recipe](ctx, tmp)
        inputs = {**_base_inputs(ctx), **made.pop("inputs")}
        manifest = VariantManifest(name=recipe, recipe=recipe, teacher=ctx.teacher_name, files=hash_files(tmp), inputs=inputs,
                                   commit=ctx.commit, quality={}, **made)
        manifest.quality = _measure(ctx, tmp, manifest)
        manifest.build_seconds = round(time.perf_counter() - started, 1)
        write_manifest(tmp, manifest)
        old = out / f".{recipe}.old-{os.getpid()}"
        if final.exists():
            final.rename(old)
        tmp.rename(final)
        if old.exists():
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    say(f"built {final}: {manifest.quality} in {manifest.build_seconds:.0f} s")
    return manifest


def build_variants(out: Path, recipes: list[str], ctx: BuildContext, say: Callable[[str], None] = log.info) -> list[VariantManifest]:
    out.mkdir(parents=True, exist_ok=True)
    return [build_one(ctx, out, recipe, say) for recipe in recipes]
