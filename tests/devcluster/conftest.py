"""Fixtures for the emulated API server's tests."""

from __future__ import annotations

from typing import Iterator

import httpx
import pytest

from forescale_devcluster.apiserver import ApiServerHandle, start_apiserver


@pytest.fixture
def apiserver(crds_dir) -> Iterator[ApiServerHandle]:
    """A fresh emulated API server with the project's CRDs, on a free port."""
    handle = start_apiserver(crds_dir)
    yield handle
    handle.stop()


@pytest.fixture
def http(apiserver) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=apiserver.url, timeout=10) as client:
        yield client
