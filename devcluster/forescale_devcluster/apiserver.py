"""Serve the emulated Kubernetes API over real HTTP, from a thread or as a process.

    handle = start_apiserver("crds/")          # a random free port on 127.0.0.1
    subprocess.run(["kubectl", "get", "infd"], env={"KUBECONFIG": str(handle.kubeconfig_path), ...})
    handle.inject_faults(409, count=2, resource="deployments", verbs={"create"})
    handle.drop_watches()
    handle.set_served("httproutes", False)     # as on a cluster without the Gateway API
    handle.request_log.rbac_keys()
    handle.stop()

Command line (for the demo, or to poke at it by hand):

    python -m forescale_devcluster.apiserver --port 8001 --crds crds/ --kubeconfig /tmp/kc --request-log /tmp/req.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Awaitable, Callable, Mapping, TypeVar

import aiohttp.web
import yaml

from .emulator import EmulatedApiServer, make_apiserver
from .kubeconfig import write_kubeconfig
from .request_log import RequestLog

T = TypeVar("T")


def load_crds(crds_dir: str | Path | None) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition document in the YAML files of a folder (not its subfolders)."""
    if crds_dir is None:
        return []
    folder = Path(crds_dir)
    if not folder.is_dir():
        raise FileNotFoundError(f"CRD folder {folder} does not exist")
    crds = []
    for path in sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                crds.append(doc)
    return crds


async def serve(server: EmulatedApiServer, host: str, port: int) -> tuple[aiohttp.web.ServerRunner, int]:
    """Listen on host:port (0 = a free port); returns the runner and the port bound."""
    runner = aiohttp.web.ServerRunner(aiohttp.web.Server(server), handle_signals=False, shutdown_timeout=0.5)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1]
    return runner, bound


class ApiServerHandle:
    """A running emulated API server in a background thread with its own event loop."""

    def __init__(self, server: EmulatedApiServer, host: str, port: int, kubeconfig_path: Path | None,
                 workdir: str | Path | None = None) -> None:
        self.server = server
        self._loop = asyncio.new_event_loop()
        self._ready: Future[int] = Future()
        self._stopping: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, args=(host, port), name="emulated-apiserver", daemon=True)
        self._thread.start()
        self.port = self._ready.result(timeout=30)
        self.host = host
        self.url = f"http://{host}:{self.port}"
        self._tmp = None
        if kubeconfig_path is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="forescale-apiserver-", dir=workdir)
            kubeconfig_path = Path(self._tmp.name) / "kubeconfig"
        self.kubeconfig_path = write_kubeconfig(kubeconfig_path, self.url)

    def _run(self, host: str, port: int) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main(host, port))

    async def _main(self, host: str, port: int) -> None:
        self._stopping = asyncio.Event()
        try:
            runner, bound = await serve(self.server, host, port)
        except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
            self._ready.set_exception(exc)
            return
        self._ready.set_result(bound)
        await self._stopping.wait()
        await self.server.drop_watches()
        await runner.cleanup()

    # --- calls into the server's loop ----------------------------------------

    def call(self, fn: Callable[[], Awaitable[T]], timeout: float = 10) -> T:
        """Run a coroutine function in the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(fn(), self._loop).result(timeout)

    def _sync(self, fn: Callable[[], T], timeout: float = 10) -> T:
        async def wrapper() -> T:
            return fn()
        return self.call(wrapper, timeout)

    @property
    def request_log(self) -> RequestLog:
        return self.server.request_log

    def inject_faults(self, status: int, count: int = 1, resource: str | None = None, verbs: set[str] | None = None,
                      subresource: str | None = None) -> None:
        """Answer the next `count` matching requests with `status` (409, 429 with Retry-After, 500, ...)."""
        self.server.faults.add(status, count, resource, verbs, subresource)

    def drop_watches(self) -> None:
        """Close every open watch stream (clients must re-list and re-watch)."""
        self.call(self.server.drop_watches)

    def set_served(self, plural: str, served: bool) -> None:
        """Serve a kind or stop serving it (404 and absent from discovery)."""
        def flip() -> None:
            res = self.server.registry.find_any(plural)
            if res is None:
                raise KeyError(f"unknown kind {plural!r}")
            res.served = served
        self._sync(flip)

    def put(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create or replace an object directly (no HTTP, no request log entry)."""
        return self.call(lambda: self.server.put_object(obj))

    def delete(self, plural: str, namespace: str | None, name: str) -> dict[str, Any]:
        """Delete an object directly, as `kubectl delete` would (finalizers and garbage collection apply)."""
        async def delete() -> dict[str, Any]:
            res = self.server.registry.find_any(plural)
            if res is None:
                raise KeyError(f"unknown kind {plural!r}")
            async with self.server._lock_for_writes():
                return await self.server._delete(res, namespace if res.namespaced else None, name)
        return self.call(delete)

    def objects(self, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Copies of the live objects of a kind, e.g. `objects("deployments", "ml")`."""
        return self._sync(lambda: self.server.snapshot(plural, namespace))

    def get(self, plural: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """One live object, or None."""
        for obj in self.objects(plural, namespace):
            if obj["metadata"]["name"] == name:
                return obj
        return None

    def stop(self) -> None:
        """Stop serving and join the thread."""
        if self._stopping is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopping.set)
            self._thread.join(timeout=10)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> "ApiServerHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_apiserver(crds_dir: str | Path | None = None, *, host: str = "127.0.0.1", port: int = 0,
                    kubeconfig_path: str | Path | None = None, request_log_path: str | Path | None = None,
                    serve_routes: bool = True, ready_deployments: bool = False,
                    namespaces: tuple[str, ...] = ("default",)) -> ApiServerHandle:
    """Start an emulated API server serving the CRDs in `crds_dir` (their CRD objects included)."""
    crds = load_crds(crds_dir)
    server = make_apiserver(crds, serve_routes=serve_routes, ready_deployments=ready_deployments,
                            request_log=RequestLog(request_log_path))
    handle = ApiServerHandle(server, host, port, Path(kubeconfig_path) if kubeconfig_path else None)
    for crd in crds:
        handle.put(crd)
    for namespace in namespaces:
        handle.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    return handle


def main(argv: list[str] | None = None) -> int:
    """`python -m forescale_devcluster.apiserver`: serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m forescale_devcluster.apiserver", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--crds", default=None, help="folder of CRD YAML files to serve (e.g. crds/)")
    parser.add_argument("--kubeconfig", default=None, help="where to write a kubeconfig for this server")
    parser.add_argument("--request-log", default=None, help="append every request as JSON lines to this file")
    parser.add_argument("--no-routes", action="store_true", help="serve neither HTTPRoute nor VirtualService")
    parser.add_argument("--ready-deployments", action="store_true",
                        help="mark every Deployment's replicas ready at once (when no pod runner runs)")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        print(f"apiserver: --port must be 0..65535, got {args.port}", file=sys.stderr)
        return 2
    try:
        handle = start_apiserver(args.crds, host=args.host, port=args.port, kubeconfig_path=args.kubeconfig,
                                 request_log_path=args.request_log, serve_routes=not args.no_routes,
                                 ready_deployments=args.ready_deployments)
    except (OSError, FileNotFoundError, yaml.YAMLError) as exc:
        print(f"apiserver: cannot start: {exc}", file=sys.stderr)
        return 1
    print(f"serving the emulated Kubernetes API at {handle.url}; KUBECONFIG={handle.kubeconfig_path}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    handle.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
