"""Fixtures shared by every test area. Keep this small: area fixtures live in the area's conftest."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def crds_dir() -> Path:
    """The top-level crds/ folder: the one source of truth for the CRDs."""
    return REPO_ROOT / "crds"
