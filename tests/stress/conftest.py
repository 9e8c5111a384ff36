"""Fixtures for the stress tests: the fake model server as a subprocess (stress_server.py), and
a way to run `forescale stress` in-process and capture what it prints."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pytest

from stress_server import start_fake_server
from forescale_devcluster import procs

# The in-process tool and the fake server share these two cores with others.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory):
    """A fake server without an admin API, shared by a module's tests."""
    server = start_fake_server(tmp_path_factory.mktemp("plain"))
    yield server
    server.stop()


@pytest.fixture
def admin_server(tmp_path):
    """A fresh fake server with a token and faults enabled."""
    server = start_fake_server(tmp_path, token="s3cret-token-xyz", faults=True)
    yield server
    server.stop()


@pytest.fixture(name="free_port")
def free_port_fixture() -> int:
    """A local port with nothing listening on it."""
    return procs.free_port()


@dataclass
class Outcome:
    code: int
    out: str
    err: str

    def json(self) -> dict:
        return json.loads(self.out)


@pytest.fixture
def stress(capsys):
    """Run `forescale stress ARGS...` in-process; returns code, stdout, stderr."""
    from forescale_cli.main import main

    def run(*args: str) -> Outcome:
        capsys.readouterr()
        code = main(["stress", *args])
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    return run
