"""Run Debian's real `prometheus` binary for the demo and the end-to-end tests.

Prometheus listens on 127.0.0.1 (a free port), keeps its TSDB in a temporary
folder, and reads every target from file-based service discovery:
- the pods, from the file the pod runner writes (`honor_labels: true`, so the
  `deployment`/`pool` labels the model server puts on its own series win over
  the identical target labels instead of becoming `exported_*` copies);
- static jobs (the gateway, the operator's metrics port), from files this
  class writes, so targets can change while it runs without a reload.
Prometheus hands discovery updates to its scrapers at most every 5 seconds
(its discovery manager's fixed throttle), so a new pod or a changed static
target is scraped 5-6 s after the file changes; the first scrape after start
takes as long. It is stopped by PID (SIGTERM, then SIGKILL), never by name: other helpers may
run their own Prometheus on the same machine.

Usage::

    with PrometheusProcess(pod_sd_file="/tmp/pods.json", static_jobs={"gateway": ["127.0.0.1:8000"]}) as prom:
        prom.query('sum(rate(forescale_requests_total[30s]))')
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

from forescale_devcluster import procs

INSTALL_HINT = "apt-get install -y prometheus"
_DURATION = re.compile(r"^\d+(ms|s|m|h)$")


class PrometheusNotInstalled(RuntimeError):
    """No `prometheus` binary on PATH."""


class PrometheusQueryError(RuntimeError):
    """Prometheus refused or failed a query; the message names the query."""


def find_prometheus(binary: str = "prometheus") -> str | None:
    """Full path of the Prometheus binary, or None when it is not installed."""
    return shutil.which(binary)


def _check_duration(name: str, value: str) -> None:
    if not isinstance(value, str) or not _DURATION.match(value):
        raise ValueError(f"{name} must be a Prometheus duration like '1s' or '500ms', got {value!r}")


def _seconds(duration: str) -> float:
    number, unit = re.match(r"^(\d+)(ms|s|m|h)$", duration).groups()
    return int(number) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


class PrometheusProcess:
    """One Prometheus server process with a generated configuration."""

    def __init__(self, *, pod_sd_file: str | None = None, static_jobs: dict[str, list[str]] | None = None,
                 scrape_interval: str = "1s", port: int | None = None, binary: str = "prometheus",
                 retention: str = "2h", rule_files: list[str] | None = None) -> None:
        _check_duration("scrape_interval", scrape_interval)
        _check_duration("retention", retention)
        for job in static_jobs or {}:
            if not re.match(r"^[a-zA-Z_][a-zA-Z0-9_-]*$", job) or job == "pods":
                raise ValueError(f"job name {job!r} is not usable (letters, digits, _ and -; 'pods' is taken)")
        self.binary = binary
        self.pod_sd_file = os.path.abspath(pod_sd_file) if pod_sd_file else None
        self.static_jobs = {job: list(targets) for job, targets in (static_jobs or {}).items()}
        self.scrape_interval = scrape_interval
        self.retention = retention
        self.rule_files = [os.path.abspath(p) for p in rule_files or []]
        self.port = port
        self.workdir: str | None = None
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:9093 (valid after start)."""
        return f"http://127.0.0.1:{self.port}"

    # -- configuration ---------------------------------------------------------
    def config(self) -> dict:
        """The prometheus.yml this process runs with."""
        interval = self.scrape_interval
        # scrape_timeout may not exceed the interval; a second is plenty locally.
        timeout = interval if _seconds(interval) < 1 else "1s"
        jobs = []
        if self.pod_sd_file:
            jobs.append({"job_name": "pods", "honor_labels": True,
                         "file_sd_configs": [{"files": [self.pod_sd_file], "refresh_interval": "1s"}]})
        for job in self.static_jobs:
            jobs.append({"job_name": job,
                         "file_sd_configs": [{"files": [self._static_file(job)], "refresh_interval": "1s"}]})
        config = {"global": {"scrape_interval": interval, "scrape_timeout": timeout, "evaluation_interval": interval},
                  "scrape_configs": jobs}
        if self.rule_files:
            config["rule_files"] = self.rule_files
        return config

    def _static_file(self, job: str) -> str:
        return os.path.join(self.workdir or "", f"targets-{job}.json")

    def set_targets(self, job: str, targets: list[str]) -> None:
        """Replace the targets of a static job while running (picked up within about a second)."""
        if job not in self.static_jobs:
            raise ValueError(f"unknown job {job!r}; static jobs are {sorted(self.static_jobs)} (declare it at creation)")
        self.static_jobs[job] = list(targets)
        if self.workdir:
            self._write_static(job)

    def _write_static(self, job: str) -> None:
        path = self._static_file(job)
        fd, tmp = tempfile.mkstemp(dir=self.workdir, suffix=".json")
        with os.fdopen(fd, "w") as fh:
            json.dump([{"targets": self.static_jobs[job], "labels": {}}] if self.static_jobs[job] else [], fh)
        os.replace(tmp, path)

    # -- lifecycle ---------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> str:
        """Write the configuration, start Prometheus, wait for /-/ready; returns its URL."""
        path = find_prometheus(self.binary)
        if path is None:
            raise PrometheusNotInstalled(f"the {self.binary!r} binary is not on PATH; install it with: {INSTALL_HINT}")
        if self.running():
            return self.url
        # A restart keeps the folder (and so the data) of a `stop(keep_data=True)`.
        self.workdir = self.workdir or tempfile.mkdtemp(prefix="forescale-prometheus-")
        for job in self.static_jobs:
            self._write_static(job)
        with open(os.path.join(self.workdir, "prometheus.yml"), "w") as fh:
            yaml.safe_dump(self.config(), fh, sort_keys=False)
        fixed_port = self.port is not None
        last_error: Exception | None = None
        # A port found free can be taken before Prometheus binds it: try a few.
        for _ in range(1 if fixed_port else 3):
            if not fixed_port:
                self.port = procs.free_port()
            self.proc = procs.popen(self._argv(path), log_path=os.path.join(self.workdir, "prometheus.log"))
            try:
                procs.wait_http_ok(self.url + "/-/ready", timeout, proc=self.proc)
                return self.url
            except (RuntimeError, TimeoutError) as exc:
                last_error = exc
                procs.stop_process(self.proc)
        log_tail = self.log_tail()
        self.stop()
        if not fixed_port:
            self.port = None
        raise RuntimeError(f"Prometheus did not start: {last_error}\n{log_tail}")

    def _argv(self, path: str) -> list[str]:
        return [path, f"--config.file={os.path.join(self.workdir, 'prometheus.yml')}",
                f"--storage.tsdb.path={os.path.join(self.workdir, 'data')}",
                f"--storage.tsdb.retention.time={self.retention}",
                f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"]

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of Prometheus' own log (for error messages)."""
        if not self.workdir:
            return ""
        try:
            with open(os.path.join(self.workdir, "prometheus.log"), errors="replace") as fh:
                return "".join(fh.readlines()[-lines:])
        except OSError:
            return ""

    def running(self) -> bool:
        """True while the process is alive."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace_seconds: float = 10.0, *, keep_data: bool = False) -> int | None:
        """Stop the process by PID; returns its exit code.

        The temporary folder goes too, unless `keep_data`: then a later
        `start()` comes back on the same port with the same data, as a
        restarted Prometheus would (tests of the operator's hold and recovery).
        """
        code = None
        if self.proc is not None:
            code = procs.stop_process(self.proc, grace_seconds)
            self.proc = None
        if self.workdir and not keep_data:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        return code

    def __enter__(self) -> "PrometheusProcess":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- HTTP API ------------------------------------------------------------------
    def _get(self, path: str, params: dict[str, str] | None = None, timeout: float = 10.0) -> dict:
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - our own local server
                return json.load(resp)
        except urllib.error.HTTPError as exc:
            try:
                body = json.load(exc)
            except ValueError:
                body = {"error": exc.reason}
            return {"status": "error", "error": body.get("error", str(exc))}
        except (urllib.error.URLError, OSError) as exc:
            raise PrometheusQueryError(f"Prometheus at {self.url} is unreachable: {exc}") from None

    def query(self, promql: str, at: float | None = None) -> list[dict]:
        """Instant query; returns the `result` list (each with `metric` and `value`)."""
        params = {"query": promql}
        if at is not None:
            params["time"] = str(at)
        answer = self._get("/api/v1/query", params)
        if answer.get("status") != "success":
            raise PrometheusQueryError(f"query {promql!r} failed: {answer.get('error', answer)}")
        data = answer["data"]
        if data.get("resultType") == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        return data["result"]

    def query_value(self, promql: str) -> float | None:
        """The value of a query that yields one series or a scalar; None when it yields nothing."""
        result = self.query(promql)
        if not result:
            return None
        if len(result) > 1:
            raise PrometheusQueryError(f"query {promql!r} returned {len(result)} series, expected one")
        return float(result[0]["value"][1])

    def targets(self) -> list[dict]:
        """The active targets, as /api/v1/targets lists them."""
        return self._get("/api/v1/targets").get("data", {}).get("activeTargets", [])

    def wait_for_targets_up(self, job: str, count: int = 1, timeout: float = 20.0) -> list[dict]:
        """Wait until `count` targets of `job` have been scraped successfully."""
        deadline = time.monotonic() + timeout
        while True:
            up = [t for t in self.targets() if t.get("labels", {}).get("job") == job and t.get("health") == "up"]
            if len(up) >= count:
                return up
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job!r}: {len(up)} of {count} targets up after {timeout:g} s")
            time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    """`python -m forescale_devcluster.prometheus_process --pod-sd FILE`: run Prometheus until interrupted."""
    import argparse
    import signal
    import sys

    parser = argparse.ArgumentParser(prog="python -m forescale_devcluster.prometheus_process",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--pod-sd", help="file_sd JSON written by the pod runner")
    parser.add_argument("--static", action="append", default=[], metavar="JOB=HOST:PORT",
                        help="a static target, e.g. gateway=127.0.0.1:8080 (repeatable)")
    parser.add_argument("--port", type=int, help="listen port (default: a free one)")
    parser.add_argument("--scrape-interval", default="2s")
    args = parser.parse_args(argv)
    jobs: dict[str, list[str]] = {}
    for item in args.static:
        job, sep, target = item.partition("=")
        if not sep or ":" not in target:
            parser.error(f"--static wants JOB=HOST:PORT, got {item!r}")
        jobs.setdefault(job, []).append(target)
    try:
        prom = PrometheusProcess(pod_sd_file=args.pod_sd, static_jobs=jobs, scrape_interval=args.scrape_interval,
                                 port=args.port)
        prom.start()
    except (ValueError, RuntimeError) as exc:
        print(f"prometheus_process: {exc}", file=sys.stderr)
        return 2
    print(f"prometheus: {prom.url}", file=sys.stderr)
    try:
        # Blocked after Prometheus started, so the child keeps its default handlers.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        prom.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
