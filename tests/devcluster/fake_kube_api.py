"""A tiny in-memory Kubernetes REST API for the stand-ins' own tests.

It answers just what the pod runner and the gateway use (list with label
selectors, get, create, merge patch, status subresource, delete), so their
tests do not depend on the full emulator; the end-to-end tests use the real
`forescale_devcluster.apiserver`.
"""

from __future__ import annotations

import copy
import itertools
import json

from aiohttp import web
from aiohttp.test_utils import TestServer


def _merge(target: dict, patch: dict) -> dict:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
    return target


def _selected(obj: dict, selector: str | None) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    for term in filter(None, (selector or "").split(",")):
        key, sep, value = term.partition("=")
        if (sep and labels.get(key) != value) or (not sep and key not in labels):
            return False
    return True


class FakeKubeApi:
    """Objects live in `self.objects[(api_root, plural)][(namespace, name)]`."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[tuple[str, str], dict]] = {}
        self.requests: list[tuple[str, str]] = []
        self._rv = itertools.count(1)
        self.server: TestServer | None = None

    # -- addressing ------------------------------------------------------
    @staticmethod
    def _parse(path: str) -> tuple[str, str, str | None, str | None, bool]:
        parts = [p for p in path.split("/") if p]
        root_len = 2 if parts[0] == "api" else 3
        root, rest = "/".join(parts[:root_len]), parts[root_len:]
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        return root, plural, namespace, name, len(rest) > 2 and rest[2] == "status"

    def put(self, obj: dict, api_root: str, plural: str) -> dict:
        """Store `obj` directly (test set-up)."""
        meta = obj.setdefault("metadata", {})
        meta.setdefault("namespace", "default")
        meta.setdefault("uid", f"uid-{meta['name']}")
        meta.setdefault("generation", 1)
        meta["resourceVersion"] = str(next(self._rv))
        self.objects.setdefault((api_root, plural), {})[(meta["namespace"], meta["name"])] = obj
        return obj

    def get(self, api_root: str, plural: str, namespace: str, name: str) -> dict | None:
        return self.objects.get((api_root, plural), {}).get((namespace, name))

    def items(self, api_root: str, plural: str, namespace: str | None = None) -> list[dict]:
        return [o for (ns, _), o in self.objects.get((api_root, plural), {}).items() if namespace in (None, ns)]

    # -- HTTP ------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.Response:
        self.requests.append((request.method, request.path))
        root, plural, namespace, name, status = self._parse(request.path)
        bucket = self.objects.setdefault((root, plural), {})
        if request.method == "GET" and name is None:
            items = [o for (ns, _), o in bucket.items()
                     if namespace in (None, ns) and _selected(o, request.query.get("labelSelector"))]
            return web.json_response({"kind": "List", "items": items})
        if request.method == "POST":
            obj = await request.json()
            obj.pop("status", None)
            obj.setdefault("metadata", {})["namespace"] = namespace
            if (namespace, obj["metadata"]["name"]) in bucket:
                return web.json_response({"message": "already exists"}, status=409)
            return web.json_response(self.put(obj, root, plural), status=201)
        obj = bucket.get((namespace, name))
        if obj is None:
            return web.json_response({"kind": "Status", "message": f"{plural} {name!r} not found"}, status=404)
        if request.method == "GET":
            return web.json_response(obj)
        if request.method == "DELETE":
            del bucket[(namespace, name)]
            return web.json_response(obj)
        if request.method == "PATCH":
            body = json.loads(await request.text())
            if status:
                _merge(obj.setdefault("status", {}), body.get("status") or {})
            else:
                body.pop("status", None)
                if "spec" in body:
                    obj["metadata"]["generation"] += 1
                _merge(obj, body)
            obj["metadata"]["resourceVersion"] = str(next(self._rv))
            return web.json_response(obj)
        return web.json_response({"message": "method not allowed"}, status=405)

    async def start(self) -> str:
        """Serve on a free local port; returns the base URL."""
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()
        return str(self.server.make_url("")).rstrip("/")

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.close()


def deployment(name: str, *, replicas: int, pool: str, namespace: str = "ml", owner: str = "chat",
               precision: str = "fp16", image: str = "forescale/server:dev") -> dict:
    """A Deployment shaped like the ones the operator makes (DESIGN.md §2)."""
    labels = {"forescale.io/deployment": owner, "forescale.io/pool": pool}
    pod_labels = {**labels, "forescale.io/precision": precision}
    env = [{"name": "FORESCALE_DEPLOYMENT", "value": owner}, {"name": "FORESCALE_POOL", "value": pool},
           {"name": "FORESCALE_PRECISION", "value": precision}]
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": pod_labels},
                              "spec": {"containers": [{"name": "server", "image": image, "env": env,
                                                       "ports": [{"containerPort": 8080}]}]}}},
    }
