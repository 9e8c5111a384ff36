"""Fixtures for the operator's tests: an emulated API server and a client for it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import AsyncIterator, Iterator

import pytest
import yaml

from forescale_devcluster.apiserver import ApiServerHandle, start_apiserver
from forescale_operator.kube.http import Connection, HttpKubeApi
from operator_harness import OperatorProcess

EXAMPLES = Path(__file__).resolve().parents[2] / "crds" / "examples"


@pytest.fixture
def cluster(crds_dir) -> Iterator[ApiServerHandle]:
    """An emulated API server whose Deployments report all replicas ready at once (no pod runner)."""
    handle = start_apiserver(crds_dir, ready_deployments=True, namespaces=("default", "ml"))
    yield handle
    handle.stop()


@pytest.fixture
async def api(cluster) -> AsyncIterator[HttpKubeApi]:
    client = HttpKubeApi(Connection(cluster.url))
    yield client
    await client.close()


def example_objects(name: str) -> list[dict]:
    """Every object of crds/examples/<name>.yaml (adopt.yaml holds the workload it adopts, then the resource)."""
    return [doc for doc in yaml.safe_load_all((EXAMPLES / f"{name}.yaml").read_text()) if doc]


def load_example(name: str = "minimal") -> dict:
    """The InferenceDeployment of crds/examples/<name>.yaml."""
    return copy.deepcopy(next(d for d in example_objects(name) if d["kind"] == "InferenceDeployment"))


@pytest.fixture
def example():
    """`example("full")`: a fresh copy of the InferenceDeployment in crds/examples/<name>.yaml."""
    return load_example


@pytest.fixture
def start_operator(cluster, tmp_path):
    """`start_operator(args=("-A",), **env)` -> OperatorProcess; every one started is stopped afterwards."""
    started: list[OperatorProcess] = []

    def start(args: tuple[str, ...] = ("-A",), name: str = "operator", **env: str) -> OperatorProcess:
        process = OperatorProcess(cluster, tmp_path / f"{name}.log", args, **env)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()
