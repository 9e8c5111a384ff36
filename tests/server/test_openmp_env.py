"""`forescale serve` defaults OMP_WAIT_POLICY to PASSIVE before torch loads OpenMP,
and keeps a value the user set (model-server/forescale_server/openmp_env.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from forescale_server.openmp_env import intra_op_threads, prefer_passive_wait

TORCH = object()  # stands for an imported torch module


@pytest.mark.parametrize("environ, modules, action, value, after", [
    # unset, torch not loaded yet: the default goes in
    ({}, {}, "set", "PASSIVE", {"OMP_WAIT_POLICY": "PASSIVE"}),
    ({"PATH": "/bin"}, {"json": json}, "set", "PASSIVE", {"PATH": "/bin", "OMP_WAIT_POLICY": "PASSIVE"}),
    # the user's value wins, whatever it is, even an empty one
    ({"OMP_WAIT_POLICY": "ACTIVE"}, {}, "kept", "ACTIVE", {"OMP_WAIT_POLICY": "ACTIVE"}),
    ({"OMP_WAIT_POLICY": "passive"}, {}, "kept", "passive", {"OMP_WAIT_POLICY": "passive"}),
    ({"OMP_WAIT_POLICY": ""}, {}, "kept", "", {"OMP_WAIT_POLICY": ""}),
    ({"OMP_WAIT_POLICY": "ACTIVE"}, {"torch": TORCH}, "kept", "ACTIVE", {"OMP_WAIT_POLICY": "ACTIVE"}),
    # torch already imported: its OpenMP runtime has read the environment; setting it now would only lie
    ({}, {"torch": TORCH}, "too_late", None, {}),
])
def test_prefer_passive_wait(environ, modules, action, value, after):
    result = prefer_passive_wait(environ, modules)
    assert (result.action, result.value) == (action, value)
    assert environ == after


@pytest.mark.parametrize("requested, environ, cpus, threads", [
    (3, {}, 2, 3),                          # asked for: as asked
    (1, {"OMP_NUM_THREADS": "4"}, 8, 1),
    (0, {}, 2, 1),                          # the event loop keeps one of two cores
    (0, {}, 16, 15),
    (0, {}, 1, 1),                          # never 0 threads
    (0, {"OMP_NUM_THREADS": "2"}, 16, 0),   # the user's OMP_NUM_THREADS: torch reads it itself
])
def test_intra_op_threads(requested, environ, cpus, threads):
    assert intra_op_threads(requested, environ, cpus) == threads


# What the real `forescale serve` process holds at the moment it first imports torch. An import hook
# (not a patch: nothing of the server is replaced) answers the first `import torch` by printing the
# environment as Python and as the C library see it (OpenMP reads the latter when it loads), then ends
# the process before any model is loaded.
PROBE = r"""
import ctypes, importlib.abc, json, os, sys

class StopAtTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            getenv = ctypes.CDLL(None).getenv
            getenv.restype = ctypes.c_char_p
            c_value = getenv(b"OMP_WAIT_POLICY")
            print(json.dumps({"python": os.environ.get("OMP_WAIT_POLICY"),
                              "libc": c_value.decode() if c_value is not None else None,
                              "torch_loaded": "torch" in sys.modules}), flush=True)
            os._exit(0)
        return None

sys.meta_path.insert(0, StopAtTorch())
from forescale_cli.main import main
sys.exit(main(["serve", "--model", "minilm", "--port", "18999"]))
"""


@pytest.mark.parametrize("user_value, expected", [
    (None, "PASSIVE"),
    ("ACTIVE", "ACTIVE"),
    ("PASSIVE", "PASSIVE"),
])
def test_serve_sets_the_policy_before_torch_is_imported(user_value, expected):
    env = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    if user_value is not None:
        env["OMP_WAIT_POLICY"] = user_value
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert result.returncode == 0 and lines, f"serve never imported torch:\n{result.stdout}\n{result.stderr}"
    seen = json.loads(lines[0])
    assert seen == {"python": expected, "libc": expected, "torch_loaded": False}

