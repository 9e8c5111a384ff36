"""Fixtures of the fault and bad-input campaigns, and the end-of-run count of what they tried."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import AsyncIterator, Iterator

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from campaign_tally import TALLY  # noqa: E402

from forescale_devcluster.apiserver import ApiServerHandle, start_apiserver  # noqa: E402
from forescale_operator.kube.http import Connection, HttpKubeApi  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "crds" / "examples"


@pytest.fixture
def tally():
    """The session's campaign counters (printed at the end of the run)."""
    return TALLY


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


@pytest.fixture
def example():
    """`example("minimal")`: a fresh copy of crds/examples/<name>.yaml."""
    return lambda name="minimal": copy.deepcopy(yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text()))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    lines = TALLY.lines()
    if not lines:
        return
    terminalreporter.section("forescale campaigns")
    for line in lines:
        terminalreporter.write_line(line)
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is not None:
        path = Path(factory.getbasetemp()) / "campaign-summary.json"
        TALLY.write(path)
        terminalreporter.write_line(f"(written to {path})")
