"""The whole system on one machine, as processes: what `forescale demo` and the end-to-end tests run.

Real: the operator (`forescale operator`), the model servers (`forescale
serve --emulate-gpu`: the real server with GPU compute replaced by a
service-time profile), Prometheus (Debian's binary). Emulated: the Kubernetes
API (KMock, over HTTP), the kubelet and Deployment controller (the pod
runner), the gateway. Each runs in its own process, as it would in a cluster,
so killing the operator or stopping Prometheus is a real kill and a real stop.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forescale_devcluster import procs
from forescale_devcluster.prometheus_process import PrometheusProcess

REPO_CRDS = Path(__file__).resolve().parents[2] / "crds"
ADMIN_TOKEN_SECRET = ("forescale-admin", "token")


@dataclass
class StackSettings:
    namespace: str = "forescale-demo"
    #: emulated model-load seconds of a pod (scheduled -> Ready)
    startup_seconds: float = 8.0
    #: Prometheus scrape interval, seconds
    scrape_seconds: float = 2.0
    #: where logs and files go; a temporary folder when None
    workdir: str | None = None
    admin_token: str = field(default_factory=lambda: os.urandom(16).hex())
    #: environment added to the operator's
    operator_env: dict[str, str] = field(default_factory=dict)
    max_pods: int = 24
    #: the emulated-GPU service profile every pod's server runs (forescale_profiles.service_time)
    profile: str = "demo-heavy"
    #: start Prometheus (and give the operator its URL); without it the operator runs with no metric source
    prometheus: bool = True
    #: more `forescale serve` options for every pod, e.g. "--max-batch 4"
    server_args: str = ""


class StackError(RuntimeError):
    """A part of the stack could not start; the message names it and its log."""


def _http(method: str, url: str, body: Any = None, timeout: float = 10.0) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310 - loopback only
        raw = resp.read()
        return json.loads(raw) if raw else None


class DemoStack:
    """Start with `start()`, stop with `stop()`; every process is stopped by PID."""

    def __init__(self, settings: StackSettings | None = None, crds_dir: Path = REPO_CRDS) -> None:
        self.settings = settings or StackSettings()
        self.crds_dir = crds_dir
        self._own_dir = None
        if self.settings.workdir is None:
            self._own_dir = tempfile.TemporaryDirectory(prefix="forescale-demo-")
            self.workdir = Path(self._own_dir.name)
        else:
            self.workdir = Path(self.settings.workdir)
            self.workdir.mkdir(parents=True, exist_ok=True)
        self.api_url = ""
        self.kubeconfig = self.workdir / "kubeconfig"
        self.file_sd = self.workdir / "pods.json"
        self.gateway_url = ""
        self.operator_metrics_port = 0
        self.prometheus: PrometheusProcess | None = None
        self._procs: dict[str, subprocess.Popen] = {}
        #: gateway process name -> URL
        self._gateways: dict[str, str] = {}

    # -- lifecycle ---------------------------------------------------------

    def log(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    def _spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        proc = procs.popen(args, env={**os.environ, **(env or {})}, log_path=str(self.log(name)))
        self._procs[name] = proc
        return proc

    def _wait(self, name: str, url: str, timeout: float = 30.0) -> None:
        try:
            procs.wait_http_ok(url, timeout, proc=self._procs.get(name))
        except (TimeoutError, RuntimeError) as exc:
            tail = self.log(name).read_text(errors="replace")[-1500:] if self.log(name).exists() else ""
            raise StackError(f"{name} did not come up at {url} ({exc}); its log {self.log(name)} ends:\n{tail}") from None

    def start(self) -> "DemoStack":
        py = sys.executable
        s = self.settings
        port = procs.free_port()
        self._spawn("apiserver", [py, "-m", "forescale_devcluster.apiserver", "--port", str(port), "--crds", str(self.crds_dir),
                                  "--kubeconfig", str(self.kubeconfig)])
        self.api_url = f"http://127.0.0.1:{port}"
        self._wait("apiserver", f"{self.api_url}/version")
        self.ensure_namespace(s.namespace)
        self.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": ADMIN_TOKEN_SECRET[0], "namespace": s.namespace},
                    "type": "Opaque", "stringData": {ADMIN_TOKEN_SECRET[1]: s.admin_token}})

        self._spawn("podrunner", [py, "-m", "forescale_devcluster.podrunner", "--api", self.api_url, "-n", s.namespace,
                                  "--file-sd", str(self.file_sd), "--startup-delay", str(s.startup_seconds),
                                  "--log-dir", str(self.workdir / "pods"), "--max-pods", str(s.max_pods),
                                  "--command", f"{{python}} -m forescale_cli.main serve --emulate-gpu {s.profile} --host 127.0.0.1 "
                                               "--port {port} --precision {precision} --enable-faults"
                                               + (f" {s.server_args}" if s.server_args else "")])
        # The pods get the admin token as in a cluster: the operator mounts the Secret into both pools.
        self.operator_metrics_port = procs.free_port()
        if s.prometheus:
            self.start_prometheus()
        self.start_operator()
        return self

    def start_gateway(self, route: str, name: str = "gateway") -> str:
        """Start a gateway for HTTPRoute `route` as process `name` (one per route); returns its URL."""
        port = procs.free_port()
        self._spawn(name, [sys.executable, "-m", "forescale_devcluster.gateway", "--api", self.api_url,
                           "-n", self.settings.namespace, "--route", route, "--port", str(port)])
        url = f"http://127.0.0.1:{port}"
        self._wait(name, f"{url}/healthz")
        self._gateways[name] = url
        if name == "gateway":
            self.gateway_url = url
        self._gateway_targets()
        return url

    def stop_gateway(self, name: str) -> None:
        """Stop gateway process `name` (SIGTERM, then SIGKILL)."""
        proc = self._procs.pop(name, None)
        if proc is not None:
            procs.stop_process(proc, grace_seconds=3.0)
        self._gateways.pop(name, None)
        self._gateway_targets()

    def _gateway_targets(self) -> None:
        if self.prometheus is not None:
            self.prometheus.set_targets("gateway", [u.removeprefix("http://") for u in self._gateways.values()])

    def start_prometheus(self) -> str:
        if self.prometheus is None:
            self.prometheus = PrometheusProcess(
                pod_sd_file=str(self.file_sd), scrape_interval=f"{self.settings.scrape_seconds:g}s",
                static_jobs={"operator": [f"127.0.0.1:{self.operator_metrics_port}"], "gateway": []},
            )
        return self.prometheus.start()

    def stop_prometheus(self) -> None:
        """A real stop (SIGTERM by PID); the data stays for the restart."""
        if self.prometheus is not None:
            self.prometheus.stop(keep_data=True)

    def start_operator(self, name: str = "operator") -> subprocess.Popen:
        env = {
            "KUBECONFIG": str(self.kubeconfig),
            "FORESCALE_PROMETHEUS_URL": self.prometheus.url if self.prometheus else "",
            "FORESCALE_ADMIN_TOKEN_SECRET": "/".join(ADMIN_TOKEN_SECRET),
            "FORESCALE_METRICS_PORT": str(self.operator_metrics_port),
            "FORESCALE_HEALTH_PORT": str(procs.free_port()),
            "FORESCALE_PEERING": "",
            "FORESCALE_LOG_LEVEL": "INFO",
            "OMP_NUM_THREADS": "1",
            **self.settings.operator_env,
        }
        proc = self._spawn(name, [sys.executable, "-m", "forescale_cli.main", "operator", "-n", self.settings.namespace], env)
        self._wait(name, f"http://127.0.0.1:{env['FORESCALE_HEALTH_PORT']}/healthz", timeout=60)
        return proc

    def kill_operator(self, name: str = "operator") -> None:
        """SIGKILL: no clean shutdown, as when a node dies."""
        proc = self._procs.pop(name, None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)

    def stop(self) -> None:
        for name in ("operator", "gateway", "podrunner"):
            proc = self._procs.pop(name, None)
            if proc is not None:
                procs.stop_process(proc, grace_seconds=8.0 if name == "podrunner" else 3.0)
        if self.prometheus is not None:
            self.prometheus.stop()
        for name, proc in list(self._procs.items()):
            procs.stop_process(proc)
        self._procs.clear()
        if self._own_dir is not None:
            self._own_dir.cleanup()

    def __enter__(self) -> "DemoStack":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the API -----------------------------------------------------------

    def ensure_namespace(self, name: str) -> None:
        try:
            _http("POST", f"{self.api_url}/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        except urllib.error.HTTPError as exc:
            if exc.code != 409:
                raise

    def _path(self, api_version: str, plural: str, namespace: str | None) -> str:
        base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        return base + (f"/namespaces/{namespace}" if namespace else "") + f"/{plural}"

    def apply(self, obj: dict[str, Any]) -> Any:
        plural = {"Secret": "secrets", "InferenceDeployment": "inferencedeployments", "ConfigMap": "configmaps"}[obj["kind"]]
        return _http("POST", f"{self.api_url}{self._path(obj['apiVersion'], plural, obj['metadata'].get('namespace'))}", obj)

    def get(self, api_version: str, plural: str, name: str) -> Any:
        try:
            return _http("GET", f"{self.api_url}{self._path(api_version, plural, self.settings.namespace)}/{name}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def list(self, api_version: str, plural: str) -> list[dict[str, Any]]:
        return (_http("GET", f"{self.api_url}{self._path(api_version, plural, self.settings.namespace)}") or {}).get("items", [])

    def patch(self, api_version: str, plural: str, name: str, patch: dict[str, Any]) -> Any:
        """A JSON merge patch of one object in the stack's namespace."""
        url = f"{self.api_url}{self._path(api_version, plural, self.settings.namespace)}/{name}"
        request = urllib.request.Request(url, data=json.dumps(patch).encode(), method="PATCH",
                                         headers={"Content-Type": "application/merge-patch+json"})
        with urllib.request.urlopen(request, timeout=10.0) as resp:  # noqa: S310 - loopback only
            return json.loads(resp.read() or b"null")

    def delete(self, api_version: str, plural: str, name: str) -> bool:
        """Delete one object of the stack's namespace; False when it was not there."""
        try:
            _http("DELETE", f"{self.api_url}{self._path(api_version, plural, self.settings.namespace)}/{name}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return False
            raise
        return True

    def infd(self, name: str) -> dict[str, Any] | None:
        return self.get("forescale.io/v1alpha1", "inferencedeployments", name)

    def events(self, name: str) -> list[dict[str, Any]]:
        """The resource's events, oldest first."""
        items = [e for e in self.list("v1", "events") if (e.get("involvedObject") or {}).get("name") == name]
        return sorted(items, key=lambda e: (e.get("firstTimestamp") or "", e["metadata"].get("creationTimestamp") or "",
                                            int(e["metadata"].get("resourceVersion") or 0)))

    def pods(self, pool: str | None = None, deployment: str | None = None) -> list[dict[str, Any]]:
        items = self.list("v1", "pods")
        out = []
        for pod in items:
            labels = pod["metadata"].get("labels") or {}
            if deployment and labels.get("forescale.io/deployment") != deployment:
                continue
            if pool and labels.get("forescale.io/pool") != pool:
                continue
            out.append(pod)
        return out

    def pod_urls(self, deployment: str, pool: str) -> list[str]:
        from forescale_operator.admin_client import pod_endpoint, pod_is_ready

        return [u for u in (pod_endpoint(p) for p in self.pods(pool, deployment) if pod_is_ready(p)) if u]

    def admin(self, url: str, path: str, body: dict[str, Any], timeout: float = 5.0) -> Any:
        data = json.dumps(body).encode()
        request = urllib.request.Request(url + path, data=data, method="POST", headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {self.settings.admin_token}"})
        with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310 - loopback only
            return json.loads(resp.read() or b"null")


def prometheus_available() -> bool:
    return shutil.which("prometheus") is not None


def wait_until(predicate, timeout: float, interval: float = 0.5, what: str = "condition") -> Any:
    """Poll `predicate` until it returns something truthy; StackError naming `what` on timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise StackError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")
