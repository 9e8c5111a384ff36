"""The package boundaries of DESIGN.md §1, enforced by import-linter (`.importlinter`):
the predictor never imports kopf, the model server never imports the operator,
the decision engine does no I/O, the simulator never imports kopf."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    lint = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(lint).exists():
        pytest.skip("lint-imports is not installed (pip install import-linter)")
    result = subprocess.run([lint, "--config", str(ROOT / ".importlinter")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


def test_no_top_level_operator_package():
    # Python's standard library owns `operator`; ours is a source root, not a package.
    assert not (ROOT / "operator" / "__init__.py").exists()
