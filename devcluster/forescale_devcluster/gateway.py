"""The local gateway: a reverse proxy that splits traffic by an HTTPRoute's weights.

It plays the Gateway API implementation (Envoy Gateway, Istio, ...) of a real
cluster, reduced to what the demo needs:
- it reads one `HTTPRoute` (gateway.networking.k8s.io/v1) and, for each
  backendRef of its first rule, the Service's selector and the ready pods it
  selects, again every `refresh_seconds` (a real gateway watches; the last good
  table is kept while the API cannot be read);
- it sends each `POST /v1/*` request to a backend chosen by smooth weighted
  round-robin over the weights (exact shares even over a few hundred requests,
  where random choice would wander), then to the pod of that backend with the
  fewest requests in flight;
- a backend with weight > 0 and no ready pod answers 503 with a JSON error, as
  Envoy's "no healthy upstream" does;
- it serves its own `/metrics` (requests per backend and code, latency, weights,
  ready pods) and `/healthz`.

It knows nothing about the operator: only Gateway API, Services and Pods.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import CONTENT_TYPE_LATEST

from forescale_devcluster.podrunner_kubeapi import KubeApi, KubeApiError, collection_path, object_path, selector_string

log = logging.getLogger(__name__)

#: where the pod runner says a pod listens (all emulated pods share 127.0.0.1)
PORT_ANNOTATION = "forescale.io/port"
#: request headers passed upstream; hop-by-hop headers are not
_FORWARDED_REQUEST_HEADERS = ("Content-Type", "Accept", "Authorization", "X-Request-Id")
_FORWARDED_RESPONSE_HEADERS = ("Content-Type", "Retry-After")


@dataclass
class Endpoint:
    """One ready pod of a backend."""

    pod: str
    url: str
    in_flight: int = 0


@dataclass
class Backend:
    """One backendRef of the route, with the ready pods its Service selects."""

    name: str
    weight: int
    endpoints: list[Endpoint] = field(default_factory=list)
    current: int = 0      # smooth weighted round-robin state
    next_index: int = 0   # round-robin tie-break among equally loaded pods


def pod_is_ready(pod: dict) -> bool:
    """True when the pod's Ready condition is True and it is not being deleted."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pod_url(pod: dict) -> str | None:
    """http://IP:PORT of a pod: the pod runner's port annotation, else its first container port."""
    ip = (pod.get("status") or {}).get("podIP") or "127.0.0.1"
    port = ((pod.get("metadata") or {}).get("annotations") or {}).get(PORT_ANNOTATION)
    if port is None:
        for container in (pod.get("spec") or {}).get("containers") or []:
            for entry in container.get("ports") or []:
                port = entry.get("containerPort")
                break
            if port is not None:
                break
    return None if port is None else f"http://{ip}:{int(port)}"


def pick_backend(backends: list[Backend]) -> Backend | None:
    """Smooth weighted round-robin (nginx's): exact shares, evenly interleaved."""
    live = [b for b in backends if b.weight > 0]
    if not live:
        return None
    total = sum(b.weight for b in live)
    for backend in live:
        backend.current += backend.weight
    best = max(live, key=lambda b: b.current)
    best.current -= total
    return best


def pick_endpoint(backend: Backend) -> Endpoint | None:
    """The pod with the fewest requests in flight; ties go round-robin."""
    if not backend.endpoints:
        return None
    n = len(backend.endpoints)
    order = [backend.endpoints[(backend.next_index + i) % n] for i in range(n)]
    chosen = min(order, key=lambda e: e.in_flight)
    backend.next_index = (backend.endpoints.index(chosen) + 1) % n
    return chosen


def _error(status: int, message: str, kind: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": kind}}, status=status)


class Gateway:
    """Serve `POST /v1/*` on host:port, split by the weights of HTTPRoute `namespace/route`."""

    def __init__(self, api_url: str, namespace: str, route: str, *, host: str = "127.0.0.1", port: int = 0,
                 refresh_seconds: float = 1.0, upstream_timeout_seconds: float = 30.0) -> None:
        if refresh_seconds <= 0:
            raise ValueError(f"refresh_seconds must be > 0, got {refresh_seconds}")
        if not namespace or not route:
            raise ValueError("the gateway needs the namespace and the name of an HTTPRoute")
        self.api = KubeApi(api_url)
        self.namespace, self.route = namespace, route
        self.host, self.port = host, port
        self.refresh_seconds = refresh_seconds
        self.upstream_timeout = aiohttp.ClientTimeout(total=upstream_timeout_seconds)
        self.backends: list[Backend] = []
        self.route_found = False
        self.last_error: str | None = None
        self._registry = CollectorRegistry()
        self._requests = Counter("forescale_gateway_requests_total", "Requests answered, by backend and status code.",
                                 ["backend", "code"], registry=self._registry)
        self._latency = Histogram("forescale_gateway_request_duration_seconds", "Time from request to response.",
                                  ["backend"], registry=self._registry,
                                  buckets=(.01, .025, .05, .1, .2, .3, .5, .75, 1, 2, 5, 10))
        self._weight = Gauge("forescale_gateway_backend_weight", "Route weight of each backend.", ["backend"],
                             registry=self._registry)
        self._ready = Gauge("forescale_gateway_ready_pods", "Ready pods of each backend.", ["backend"],
                            registry=self._registry)
        self._refresh_errors = Counter("forescale_gateway_refresh_errors_total", "Failed reads of route or pods.",
                                       registry=self._registry)
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._task: asyncio.Task | None = None

    @property
    def url(self) -> str:
        """Base URL the gateway listens on (valid after start)."""
        return f"http://{self.host}:{self.port}"

    # -- routing table --------------------------------------------------------
    async def refresh_once(self) -> None:
        """Re-read the route, its Services and their pods; keep SWRR state for unchanged backends."""
        route = await self.api.get(object_path("gateway.networking.k8s.io/v1", "httproutes", self.namespace, self.route))
        if route is None:
            self.route_found, self.backends = False, []
            return
        rules = (route.get("spec") or {}).get("rules") or []
        refs = (rules[0].get("backendRefs") or []) if rules else []
        old = {b.name: b for b in self.backends}
        backends = []
        for ref in refs:
            name = ref.get("name")
            if not name or ref.get("kind", "Service") != "Service":
                continue
            weight = max(0, int(ref.get("weight", 1)))  # Gateway API: default 1, minimum 0
            backend = old.get(name) or Backend(name, weight)
            backend.weight = weight
            backend.endpoints = await self._endpoints(ref.get("namespace") or self.namespace, name,
                                                      {e.pod: e for e in backend.endpoints})
            backends.append(backend)
            self._weight.labels(name).set(weight)
            self._ready.labels(name).set(len(backend.endpoints))
        self.route_found, self.backends = True, backends

    async def _endpoints(self, namespace: str, service: str, known: dict[str, Endpoint]) -> list[Endpoint]:
        svc = await self.api.get(object_path("v1", "services", namespace, service))
        selector = ((svc or {}).get("spec") or {}).get("selector")
        if not selector:
            # A Service without a selector has no endpoints we could find.
            return []
        pods = await self.api.list(collection_path("v1", "pods", namespace), label_selector=selector_string(selector))
        endpoints = []
        for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
            url = pod_url(pod)
            if url is None or not pod_is_ready(pod):
                continue
            name = pod["metadata"]["name"]
            # Keep the in-flight count of pods we already knew.
            endpoint = known.get(name) or Endpoint(name, url)
            endpoint.url = url
            endpoints.append(endpoint)
        return endpoints

    async def _refresh_loop(self) -> None:
        while True:
            try:
                await self.refresh_once()
                error = None if self.route_found else f"HTTPRoute {self.namespace}/{self.route} not found"
            except (KubeApiError, aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError) as exc:
                # Keep routing with the last good table, as a real gateway does.
                self._refresh_errors.inc()
                error = f"cannot read the route: {exc}"
            if error and error != self.last_error:
                log.warning("gateway: %s", error)
            self.last_error = error
            await asyncio.sleep(self.refresh_seconds)

    # -- HTTP -------------------------------------------------------------------
    async def _proxy(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        backend = pick_backend(self.backends)
        if backend is None:
            why = (f"HTTPRoute {self.namespace}/{self.route} not found" if not self.route_found
                   else f"HTTPRoute {self.namespace}/{self.route} has no backend with weight > 0")
            return self._count("none", _error(503, why, "unavailable"), started)
        endpoint = pick_endpoint(backend)
        if endpoint is None:
            return self._count(backend.name, _error(
                503, f"no ready pod for backend {backend.name} (weight {backend.weight})", "unavailable"), started)
        body = await request.read()
        headers = {k: request.headers[k] for k in _FORWARDED_REQUEST_HEADERS if k in request.headers}
        response = await self._forward(request, backend, endpoint, body, headers)
        if isinstance(response, aiohttp.ClientConnectorError):
            # The connection was refused, so the request never reached the pod:
            # safe to send once more, to another pod of the same backend
            # (a pod that just stopped, before the next refresh drops it).
            # Until the next refresh, leave the refusing pod out (passive outlier ejection).
            backend.endpoints = others = [e for e in backend.endpoints if e is not endpoint]
            if others:
                endpoint = min(others, key=lambda e: e.in_flight)
                response = await self._forward(request, backend, endpoint, body, headers)
            if isinstance(response, aiohttp.ClientError):
                response = _error(502, f"pod {endpoint.pod} of {backend.name} failed: {response}", "bad_gateway")
        response.headers["X-Forescale-Backend"] = backend.name
        response.headers["X-Forescale-Pod"] = endpoint.pod
        return self._count(backend.name, response, started)

    async def _forward(self, request: web.Request, backend: Backend, endpoint: Endpoint, body: bytes,
                       headers: dict[str, str]) -> web.Response | aiohttp.ClientError:
        """Send the request to one pod; a connection error is returned, not raised, so the caller may retry."""
        endpoint.in_flight += 1
        try:
            async with self._session.request(request.method, endpoint.url + request.path_qs, data=body,
                                             headers=headers) as upstream:
                payload = await upstream.read()
                out_headers = {k: upstream.headers[k] for k in _FORWARDED_RESPONSE_HEADERS if k in upstream.headers}
                return web.Response(status=upstream.status, body=payload, headers=out_headers)
        except asyncio.TimeoutError:
            return _error(504, f"pod {endpoint.pod} of {backend.name} did not answer in time", "timeout")
        except aiohttp.ClientConnectorError as exc:
            return exc
        except aiohttp.ClientError as exc:
            return _error(502, f"pod {endpoint.pod} of {backend.name} failed: {exc}", "bad_gateway")
        finally:
            endpoint.in_flight -= 1

    def _count(self, backend: str, response: web.Response, started: float) -> web.Response:
        self._requests.labels(backend, str(response.status)).inc()
        self._latency.labels(backend).observe(time.perf_counter() - started)
        return response

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(body=generate_latest(self._registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.json_response({
            "status": "ok", "route": f"{self.namespace}/{self.route}", "route_found": self.route_found,
            "backends": {b.name: {"weight": b.weight, "ready_pods": len(b.endpoints)} for b in self.backends},
            "last_error": self.last_error,
        })

    def requests_by_backend(self) -> dict[str, int]:
        """Requests answered so far per backend (all codes), read from the gateway's own metrics."""
        totals: dict[str, int] = {}
        for metric in self._registry.collect():
            if metric.name != "forescale_gateway_requests":
                continue
            for sample in metric.samples:
                if sample.name.endswith("_total"):
                    name = sample.labels["backend"]
                    totals[name] = totals.get(name, 0) + int(sample.value)
        return totals

    # -- lifecycle --------------------------------------------------------------
    async def start(self) -> str:
        """Read the route once, start serving, and keep refreshing; returns the gateway URL."""
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_post("/v1/{tail:.*}", self._proxy)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        # Pool the upstream connections: a new TCP connection per request costs CPU we do not have.
        self._session = aiohttp.ClientSession(timeout=self.upstream_timeout,
                                              connector=aiohttp.TCPConnector(limit=256))
        with contextlib.suppress(KubeApiError, aiohttp.ClientError, asyncio.TimeoutError, OSError):
            await self.refresh_once()
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # the real port when 0 was asked
        self._task = asyncio.create_task(self._refresh_loop(), name="gateway-refresh")
        return self.url

    async def stop(self) -> None:
        """Stop refreshing and serving; close every connection."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()
        await self.api.close()

    async def __aenter__(self) -> "Gateway":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def main(argv: list[str] | None = None) -> int:
    """`python -m forescale_devcluster.gateway --api URL -n NS --route NAME`: serve until interrupted."""
    import argparse
    import sys

    from forescale_devcluster.procs import wait_for_termination

    parser = argparse.ArgumentParser(prog="python -m forescale_devcluster.gateway", description=__doc__.split("\n")[0])
    parser.add_argument("--api", required=True, help="API server URL, e.g. http://127.0.0.1:8001")
    parser.add_argument("-n", "--namespace", required=True)
    parser.add_argument("--route", required=True, help="name of the HTTPRoute to follow")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0..65535, got {args.port}")
    try:
        gateway = Gateway(args.api, args.namespace, args.route, port=args.port)
    except ValueError as exc:
        print(f"gateway: {exc}", file=sys.stderr)
        return 2

    async def serve() -> None:
        async with gateway:
            print(f"gateway: {gateway.url} -> HTTPRoute {args.namespace}/{args.route}", file=sys.stderr)
            await wait_for_termination()

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        asyncio.run(serve())
    except OSError as exc:
        print(f"gateway: cannot listen on port {args.port}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
