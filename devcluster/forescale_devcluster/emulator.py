"""The emulated Kubernetes API server: kmock's KubernetesEmulator with what the operator relies on.

`EmulatedApiServer` keeps objects in kmock's store (`.objects`, with their
history, for assertions) and answers the REST API the way a real server does
for the operations kopf, kubectl and the operator use: discovery, get, list
(List kinds, label and field selectors, Table responses), watch streams that
resume from a resourceVersion, create (201, uid, generateName), update,
patch (merge, strategic-as-merge, JSON patch), the status and scale
subresources, delete with finalizers, and garbage collection through
ownerReferences. It records each request for RBAC checks and can inject
faults (409/429/5xx, dropped watches). Paths outside `/api(s)` fall through to
kmock's own DSL, so tests can still add reactions.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any, AsyncIterator, Mapping

import aiohttp.web
import attrs
import kmock

from . import store
from .changelog import ChangeLog
from .conformance import route_schemas
from .faults import FaultPlan, status_body
from .object_writes import ObjectWrites
from .paths import ApiPath, parse_api_path
from .request_log import RequestLog, RequestRecord
from .resources import Registry, ServedResource, builtin_resources, from_crd, route_resources
from .selectors import SelectorError, field_selector, label_selector
from .tables import render_table, wants_table

_VERSION = {"major": "1", "minor": "30", "gitVersion": "v1.30.0-forescale-emulated", "platform": "linux/amd64",
            "goVersion": "go1.22", "compiler": "gc", "gitCommit": "emulated", "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z"}


def _verb(method: str, path: ApiPath, params: Mapping[str, str]) -> str:
    if method == "GET":
        if params.get("watch") in ("true", "1"):
            return "watch"
        return "get" if path.name else "list"
    if method == "DELETE" and not path.name:
        return "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, method.lower())


def _json(data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> aiohttp.web.Response:
    return aiohttp.web.json_response(data, status=status, headers=headers)


@attrs.define(kw_only=True)
class EmulatedApiServer(ObjectWrites, kmock.KubernetesEmulator):
    """A Kubernetes API stand-in. Build it with `make_apiserver()`; serve it with `apiserver.start_apiserver()`."""

    registry: Registry = attrs.field(factory=Registry)
    request_log: RequestLog = attrs.field(factory=RequestLog)
    faults: FaultPlan = attrs.field(factory=FaultPlan)
    #: set every Deployment's status to "all replicas ready" (no pod runner)
    ready_deployments: bool = False
    _rv: int = attrs.field(default=1, init=False)
    changes: ChangeLog = attrs.field(factory=ChangeLog, init=False)
    _write_lock: asyncio.Lock | None = attrs.field(default=None, init=False)

    # --- entry point ---------------------------------------------------------

    async def __call__(self, raw: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:  # type: ignore[override]
        path = parse_api_path(raw.path)
        if raw.path in ("/version", "/version/"):
            return _json(_VERSION)
        if raw.path in ("/healthz", "/readyz", "/livez"):
            return aiohttp.web.Response(text="ok")
        if raw.path.startswith("/openapi"):
            return _json(status_body(404, "the emulated API server does not serve OpenAPI documents", "NotFound"), 404)
        if path is None:
            return await super().__call__(raw)
        if path.kind == "groups":
            return _json(self.registry.group_list())
        if path.kind == "discovery":
            return self._discovery(path)
        return await self._serve(raw, path)

    def _discovery(self, path: ApiPath) -> aiohttp.web.Response:
        if path.group is None:
            return _json(self.registry.core_versions())
        if path.group == "" and path.version is None:
            return _json(self.registry.core_versions())
        if path.version is None:
            doc = self.registry.group(path.group)
        else:
            doc = self.registry.resource_list(path.group, path.version)
        if doc is None:
            return _json(status_body(404, "the server could not find the requested resource", "NotFound"), 404)
        return _json(doc)

    async def _serve(self, raw: aiohttp.web.BaseRequest, path: ApiPath) -> aiohttp.web.StreamResponse:
        params = dict(raw.query)
        verb = _verb(raw.method, path, params)
        group, version, plural = path.group or "", path.version or "", path.plural or ""
        namespace = path.namespace
        if group == "" and plural == "namespaces" and path.name is None and verb == "get":
            verb = "list"
        record = dict(verb=verb, api_group=group, resource=plural, subresource=path.subresource or "",
                      namespace=namespace or "", name=path.name or "", user_agent=raw.headers.get("User-Agent", ""))
        fault = self.faults.take(verb, plural, path.subresource)
        if fault is not None:
            self.request_log.append(RequestRecord(**record, status=fault))
            headers = {"Retry-After": "1"} if fault == 429 else None
            return _json(status_body(fault, f"injected fault: {fault} for {verb} {plural}"), fault, headers)
        res = self.registry.find(group, version, plural)
        try:
            if res is None:
                raise store.ApiError(404, "the server could not find the requested resource", "NotFound")
            if path.subresource and path.subresource not in res.subresources:
                raise store.ApiError(404, f"{res.plural} has no subresource {path.subresource!r}", "NotFound")
            if verb == "watch":
                self.request_log.append(RequestRecord(**record, status=200))
                return await self._watch(raw, res, namespace, path.name, params)
            body = await self._body(raw)
            response = await self._dispatch(raw, verb, res, path, body, params)
        except store.ApiError as exc:
            response = _json(status_body(exc.code, exc.message, exc.reason, exc.details), exc.code)
        except SelectorError as exc:
            response = _json(status_body(400, str(exc), "BadRequest"), 400)
        self.request_log.append(RequestRecord(**record, status=response.status))
        return response

    @staticmethod
    async def _body(raw: aiohttp.web.BaseRequest) -> Any:
        if "protobuf" in (raw.content_type or ""):
            # client-go falls back to JSON when protobuf is refused with 415.
            raise store.ApiError(415, "the emulated API server speaks JSON only", "UnsupportedMediaType")
        data = await raw.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise store.ApiError(400, f"the request body is not UTF-8: {exc}", "BadRequest") from exc
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError:
            try:
                import yaml  # kubectl's server-side apply sends YAML
                return yaml.safe_load(text)
            except Exception as exc:  # noqa: BLE001 - any parse failure is the client's bad body
                raise store.ApiError(400, f"the request body is neither JSON nor YAML: {exc}", "BadRequest") from exc

    async def _dispatch(self, raw: aiohttp.web.BaseRequest, verb: str, res: ServedResource, path: ApiPath, body: Any,
                        params: Mapping[str, str]) -> aiohttp.web.Response:
        namespace = path.namespace if res.namespaced else None
        accept = raw.headers.get("Accept")
        if verb == "list":
            items = self._select(res, namespace, params)
            if wants_table(accept):
                return _json(render_table(res, items, str(self._rv)))
            return _json({"apiVersion": res.api_version, "kind": f"{res.kind}List",
                          "metadata": {"resourceVersion": str(self._rv)}, "items": items})
        if verb == "get":
            obj = self._get(res, namespace, path.name)
            if path.subresource == "scale":
                return _json(self._scale(obj))
            if wants_table(accept):
                return _json(render_table(res, [obj], str(self._rv)))
            return _json(obj)
        if params.get("dryRun"):
            raise store.ApiError(400, "the emulated API server does not support dryRun", "BadRequest")
        async with self._lock_for_writes():
            if verb == "create":
                if path.name:
                    raise store.ApiError(405, "create is answered on the collection, not on a name", "MethodNotAllowed")
                return _json(await self._create(res, namespace, body), 201)
            if verb in ("update", "patch"):
                if path.subresource == "scale":
                    return _json(await self._write_scale(res, namespace, path.name, body, raw.content_type))
                return _json(await self._update(res, namespace, path.name, path.subresource, body, verb, raw.content_type))
            if verb == "delete":
                return _json(await self._delete(res, namespace, path.name))
            if verb == "deletecollection":
                items = self._select(res, namespace, params)
                for item in items:
                    await self._delete(res, item["metadata"].get("namespace"), item["metadata"]["name"])
                return _json({"apiVersion": res.api_version, "kind": f"{res.kind}List", "metadata": {}, "items": items})
        raise store.ApiError(405, f"verb {verb} is not supported", "MethodNotAllowed")

    def _lock_for_writes(self) -> asyncio.Lock:
        if self._write_lock is None:
            self._write_lock = asyncio.Lock()
        return self._write_lock

    # --- reads ---------------------------------------------------------------

    @staticmethod
    def _rkey(res: ServedResource) -> kmock.resource:
        return kmock.resource(res.group, res.version, res.plural)

    def _live(self, res: ServedResource) -> list[dict[str, Any]]:
        rkey = self._rkey(res)
        return [obj.raw for (r, _, _), obj in self.objects.items() if r == rkey and not obj.deleted]

    def _find(self, res: ServedResource, namespace: str | None, name: str | None) -> dict[str, Any] | None:
        key = (self._rkey(res), namespace, name)
        if key in self.objects and not self.objects[key].deleted:
            return self.objects[key].raw
        return None

    def _get(self, res: ServedResource, namespace: str | None, name: str | None) -> dict[str, Any]:
        obj = self._find(res, namespace, name)
        if obj is None:
            raise store.ApiError(404, f'{res.plural}.{res.group or "core"} "{name}" not found', "NotFound",
                                 {"name": name, "kind": res.plural, "group": res.group})
        return obj

    def _select(self, res: ServedResource, namespace: str | None, params: Mapping[str, str]) -> list[dict[str, Any]]:
        by_labels = label_selector(params.get("labelSelector"))
        by_fields = field_selector(params.get("fieldSelector"))
        items = [o for o in self._live(res)
                 if (namespace is None or o["metadata"].get("namespace") == namespace)
                 and by_labels(o["metadata"].get("labels") or {}) and by_fields(o)]
        return sorted(items, key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"]))

    @staticmethod
    def _scale(obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        return {"apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if k in meta},
                "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 1)},
                "status": {"replicas": (obj.get("status") or {}).get("replicas", 0)}}

    # --- watch ---------------------------------------------------------------

    async def _watch(self, raw: aiohttp.web.BaseRequest, res: ServedResource, namespace: str | None, name: str | None,
                     params: Mapping[str, str]) -> aiohttp.web.StreamResponse:
        by_labels = label_selector(params.get("labelSelector"))
        by_fields = field_selector(params.get("fieldSelector"))
        if name:
            by_fields_outer = by_fields
            by_fields = lambda o: o["metadata"].get("name") == name and by_fields_outer(o)  # noqa: E731
        namespace = namespace if res.namespaced else None

        def wanted(obj: Mapping[str, Any]) -> bool:
            return ((namespace is None or obj["metadata"].get("namespace") == namespace)
                    and by_labels(obj["metadata"].get("labels") or {}) and by_fields(obj))

        timeout = float(params.get("timeoutSeconds") or 1800)
        as_table = wants_table(raw.headers.get("Accept"))
        response = aiohttp.web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(raw)
        try:
            async for event in self._events(res, wanted, params.get("resourceVersion") or "", timeout):
                if as_table and event["type"] != "ERROR":
                    # `kubectl get -w` watches in Table form: each event carries a one-row Table.
                    obj = event["object"]
                    event = {"type": event["type"],
                             "object": render_table(res, [obj], obj["metadata"].get("resourceVersion", ""))}
                await response.write(json.dumps(event).encode() + b"\n")
            await response.write_eof()
        except (ConnectionResetError, ConnectionError, asyncio.CancelledError):
            pass
        return response

    async def _events(self, res: ServedResource, wanted, since: str, timeout: float) -> AsyncIterator[dict[str, Any]]:
        if since in ("", "0"):
            # No version (or "any"): the current objects as ADDED, then what follows.
            start = self._rv
            for obj in self._live(res):
                if wanted(obj):
                    yield {"type": "ADDED", "object": obj}
        else:
            try:
                start = int(since)
            except ValueError:
                yield {"type": "ERROR", "object": status_body(400, f"invalid resourceVersion {since!r}", "BadRequest")}
                return
            if self.changes.expired(start):
                yield {"type": "ERROR", "object": status_body(410, f"too old resource version: {start}", "Expired")}
                return
        async for event in self.changes.follow(res.key, wanted, start, timeout):
            yield event

    async def drop_watches(self) -> None:
        """End every open watch stream now, as a restarting API server or a proxy timeout would."""
        await self.changes.drop_watches()

    # --- direct access for tests and the demo (no HTTP) -----------------------

    async def put_object(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create an object, or replace it when it exists (like `kubectl apply` for plain objects)."""
        res = self.resource_of(obj)
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace", "default") if res.namespaced else None
        async with self._lock_for_writes():
            if self._find(res, namespace, meta.get("name")) is None:
                return await self._create(res, namespace, obj)
            body = copy.deepcopy(dict(obj))
            body.get("metadata", {}).pop("resourceVersion", None)
            new = await self._update(res, namespace, meta.get("name"), None, body, "update", "application/json")
            if res.has_status and "status" in obj:
                new = await self._update(res, namespace, meta.get("name"), "status", {"status": obj["status"]},
                                         "patch", "application/merge-patch+json")
            return new

    def resource_of(self, obj: Mapping[str, Any]) -> ServedResource:
        api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
        group, _, version = api_version.rpartition("/")
        for res in self.registry.kinds.values():
            if res.group == group and res.version == version and res.kind == kind:
                return res
        raise store.ApiError(404, f"no kind {kind} in {api_version} is known to this server", "NotFound")

    def snapshot(self, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Copies of the live objects of a kind (by plural, kind or plural.group)."""
        res = self.registry.find_any(plural)
        if res is None:
            raise KeyError(f"unknown kind {plural!r}")
        return copy.deepcopy([o for o in self._live(res)
                              if namespace is None or o["metadata"].get("namespace") == namespace])


def make_apiserver(crds: list[Mapping[str, Any]] = (), *, serve_routes: bool = True,
                   ready_deployments: bool = False, request_log: RequestLog | None = None) -> EmulatedApiServer:
    """A server with the built-in kinds, the route kinds (unless told not to) and the given CRDs served."""
    server = EmulatedApiServer(ready_deployments=ready_deployments, request_log=request_log if request_log is not None else RequestLog())
    server.registry.add(builtin_resources())
    routes = route_resources(route_schemas())
    for route in routes:
        route.served = serve_routes
    server.registry.add(routes)
    for crd in crds:
        server.registry.add(from_crd(crd))
    return server
