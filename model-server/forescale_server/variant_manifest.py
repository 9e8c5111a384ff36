"""The manifest of a built model variant (`variant.json`) and the checks made
before a server loads one.

A variant directory is complete only when its manifest exists: `variants
build` writes the manifest last, inside a temporary directory that is renamed
into place. The manifest lists every file with its SHA-256, so a truncated or
half-copied directory is refused naming the file, and it names the teacher, so
a variant of another model is refused too.

This module imports neither torch nor transformers.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

MANIFEST = "variant.json"
FORMAT = 1
#: recipe names, in build order
RECIPES = ("int8", "pruned", "distilled", "distilled-int8", "fused")
#: how a variant's weights are stored: a Hugging Face BERT directory, the same
#: with some attention heads removed, or an ONNX graph run by onnxruntime
ARCHITECTURES = ("bert", "bert-pruned", "onnx")


class VariantError(ValueError):
    """A variant directory that cannot be served; the message names the file."""


@dataclass
class VariantManifest:
    name: str
    recipe: str
    teacher: str
    architecture: str
    #: the precision the server starts at unless told otherwise
    precision: str
    #: file name -> SHA-256 of its bytes
    files: dict[str, str]
    #: what the recipe was given: sources of text, split, seeds, epochs, layers...
    inputs: dict
    #: git commit of the code that built it ("unknown" outside a checkout)
    commit: str
    #: quality measured at build time on the held-out sentences
    quality: dict
    #: heads removed, per layer index (as a string, JSON keys): bert-pruned only
    pruned_heads: dict[str, list[int]] = field(default_factory=dict)
    #: Linear layers whose outlier channels stay fp32 at int8 (empty: the server's default)
    int8_split: list[str] = field(default_factory=list)
    build_seconds: float = 0.0
    format: int = FORMAT

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, data: dict, where: Path) -> "VariantManifest":
        if not isinstance(data, dict):
            raise VariantError(f"{where}: expected a JSON object")
        if data.get("format") != FORMAT:
            raise VariantError(f"{where}: unknown manifest format {data.get('format')!r}; this server reads format {FORMAT}")
        required = ("name", "recipe", "teacher", "architecture", "precision", "files", "inputs", "commit", "quality")
        missing = [k for k in required if k not in data]
        if missing:
            raise VariantError(f"{where}: missing key(s) {', '.join(missing)}")
        if data["recipe"] not in RECIPES:
            raise VariantError(f"{where}: unknown recipe {data['recipe']!r}; known: {', '.join(RECIPES)}")
        if data["architecture"] not in ARCHITECTURES:
            raise VariantError(f"{where}: unknown architecture {data['architecture']!r}; known: {', '.join(ARCHITECTURES)}")
        if not isinstance(data["files"], dict) or not data["files"]:
            raise VariantError(f"{where}: 'files' must list the variant's files with their SHA-256")
        known = {f.name for f in cls.__dataclass_fields__.values()}
        return cls(**{k: v for k, v in data.items() if k in known})


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def hash_files(directory: Path) -> dict[str, str]:
    """SHA-256 of every regular file directly in `directory` except the manifest."""
    return {p.name: file_sha256(p) for p in sorted(directory.iterdir()) if p.is_file() and p.name != MANIFEST}


def write_manifest(directory: Path, manifest: VariantManifest) -> None:
    """Write the manifest last (after every file it lists), through a rename."""
    tmp = directory / (MANIFEST + ".tmp")
    tmp.write_text(manifest.to_json())
    tmp.replace(directory / MANIFEST)


def read_manifest(directory: Path, teacher: str | None = None, verify: bool = True) -> VariantManifest:
    """The manifest of `directory`, after checking that the directory is a
    finished variant of `teacher` whose files are all there, unchanged."""
    directory = Path(directory)
    if not directory.is_dir():
        raise VariantError(f"{directory}: no such variant directory")
    path = directory / MANIFEST
    if not path.is_file():
        leftovers = " (it looks like an interrupted build)" if directory.name.startswith(".") else ""
        raise VariantError(f"{path} is missing: {directory} is not a finished variant{leftovers}")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise VariantError(f"{path} is not valid JSON: {exc}") from None
    manifest = VariantManifest.from_dict(data, path)
    if teacher is not None and manifest.teacher != teacher:
        raise VariantError(f"{path}: this variant was built from model {manifest.teacher!r}, not {teacher!r}")
    for name, digest in manifest.files.items():
        file = directory / name
        if not file.is_file():
            raise VariantError(f"{file} is missing (listed in {path}): the variant is incomplete")
        if verify and file_sha256(file) != digest:
            raise VariantError(f"{file} does not match the SHA-256 in {path}: the file is truncated or was changed")
    return manifest
