"""Run `forescale operator` in a subprocess against an emulated API server (used by the e2e tests)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from forescale_devcluster.apiserver import ApiServerHandle
from forescale_devcluster.procs import free_port


class OperatorProcess:
    """`forescale operator` in a subprocess against an emulated API server: as close to a cluster as it gets."""

    def __init__(self, cluster: ApiServerHandle, log_path: Path, args: tuple[str, ...] = ("-A",), **env: str) -> None:
        self.log_path = log_path
        self.env = dict(os.environ, KUBECONFIG=str(cluster.kubeconfig_path), FORESCALE_METRICS_PORT=str(free_port()),
                        FORESCALE_HEALTH_PORT=str(free_port()), FORESCALE_MIN_LOOP_SECONDS="0.5", **env)
        if "FORESCALE_NAMESPACES" not in env:
            self.env.pop("FORESCALE_NAMESPACES", None)
        forescale = Path(sys.executable).parent / "forescale"
        self._log = log_path.open("a")
        self.process = subprocess.Popen([str(forescale), "operator", *args], env=self.env, stdout=self._log,
                                        stderr=subprocess.STDOUT)

    @property
    def log(self) -> str:
        return self.log_path.read_text()

    def wait_for_log(self, text: str, timeout: float = 30) -> None:
        wait_until(lambda: text in self.log, timeout, f"operator log line {text!r}", self)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:  # a hung operator is killed, never left behind
                self.process.kill()
                self.process.wait(5)
        self._log.close()
        return self.process.returncode


def wait_until(predicate, timeout: float = 20, what: str = "condition", operator: OperatorProcess | None = None,
               seen=None):
    """Poll until predicate() is truthy; fail with the operator's log tail when it never is, and with `seen()`
    (what the predicate looked at, e.g. the resource's status) so that a rare timeout says which part was missing."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    tail = operator.log[-3000:] if operator is not None else ""
    last = f"\nlast seen: {seen()}" if seen is not None else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {what}{last}\n{tail}")
