"""Writes of the emulated API server: create, update/patch, scale, delete, garbage collection.

A mixin of `EmulatedApiServer` (kept apart to keep each module small): every
write bumps the resourceVersion, is admitted against the CRD (defaults, schema,
CEL), is stored in kmock's object store and is recorded for the watches.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from . import builtin_validation, crd_validation, store
from .resources import ServedResource, from_crd


class ObjectWrites:
    """Needs from its host: `_rv`, `objects`, `registry`, `ready_deployments`, `_rkey`, `_find`, `_get`,
    `_live`, `_scale` and `_record`."""

    # --- writes --------------------------------------------------------------

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    async def _record(self, res: ServedResource, event_type: str, obj: Mapping[str, Any]) -> None:
        await self.changes.record(res.key, event_type, obj)

    def _store(self, res: ServedResource, obj: dict[str, Any]) -> None:
        key = (self._rkey(res), obj["metadata"].get("namespace"), obj["metadata"]["name"])
        if key in self.objects:
            self.objects[key].create(obj)
            history = self.objects[key].history
            if len(history) > 8:  # keep memory flat in long demos; tests look at the last few
                del history[: len(history) - 8]
        else:
            self.objects[key] = obj

    async def _create(self, res: ServedResource, namespace: str | None, body: Any) -> dict[str, Any]:
        obj = store.prepare_create(res, namespace, body, self._rv + 1)
        if self._find(res, obj["metadata"].get("namespace"), obj["metadata"]["name"]) is not None:
            raise store.ApiError(409, f'{res.plural} "{obj["metadata"]["name"]}" already exists', "AlreadyExists",
                                 {"name": obj["metadata"]["name"], "kind": res.plural, "group": res.group})
        obj = self._admit(res, obj)
        self._next_rv()
        if res.kind == "Deployment" and self.ready_deployments:
            store.emulate_deployment_status(obj)
        self._store(res, obj)
        if res.kind == "CustomResourceDefinition":
            self.registry.add(from_crd(obj))
        await self._record(res, "ADDED", obj)
        return obj

    async def _update(self, res: ServedResource, namespace: str | None, name: str | None, subresource: str | None,
                      body: Any, verb: str, content_type: str) -> dict[str, Any]:
        old = self._get(res, namespace, name)
        if verb == "update":
            if not isinstance(body, Mapping):
                raise store.ApiError(400, "the request body must be a JSON object", "BadRequest")
            store.check_version(old, body)
            candidate = body
        else:
            if isinstance(body, Mapping):
                store.check_version(old, body)
            candidate = store.patched(old, body, content_type)
        new = self._admit(res, store.apply_change(res, old, candidate, subresource, self._rv + 1), old)
        self._next_rv()
        if res.kind == "Deployment" and self.ready_deployments and subresource != "status":
            store.emulate_deployment_status(new)
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            self._store(res, new)
            await self._remove(res, new)
            return new
        self._store(res, new)
        await self._record(res, "MODIFIED", new)
        return new

    def _admit(self, res: ServedResource, obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
        """Default and validate a custom resource against its CRD's schema and CEL rules (ratcheted against
        `old`, the stored object, on an update), a built-in kind against its official schema (422 when invalid)."""
        if res.schema is None:
            defaulted, errors = obj, builtin_validation.builtin_errors(res.kind, obj)
        else:
            defaulted, errors = crd_validation.validate(obj, res.schema, old)
        if errors:
            name = obj.get("metadata", {}).get("name", "")
            raise store.ApiError(422, f'{res.kind}.{res.group} "{name}" is invalid: ' + "; ".join(errors), "Invalid",
                                 {"name": name, "kind": res.kind, "group": res.group,
                                  "causes": [{"message": e} for e in errors]})
        return defaulted

    async def _write_scale(self, res: ServedResource, namespace: str | None, name: str | None, body: Any,
                           content_type: str) -> dict[str, Any]:
        old = self._get(res, namespace, name)
        scale = store.patched(self._scale(old), body, content_type) if "patch" in content_type else body
        replicas = ((scale or {}).get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise store.ApiError(422, f"Scale.spec.replicas must be a non-negative integer, got {replicas!r}", "Invalid")
        candidate = copy.deepcopy(old)
        candidate.setdefault("spec", {})["replicas"] = replicas
        new = store.apply_change(res, old, candidate, None, self._next_rv())
        if self.ready_deployments:
            store.emulate_deployment_status(new)
        self._store(res, new)
        await self._record(res, "MODIFIED", new)
        return self._scale(new)

    async def _delete(self, res: ServedResource, namespace: str | None, name: str | None) -> dict[str, Any]:
        old = self._get(res, namespace, name)
        if old["metadata"].get("finalizers"):
            if old["metadata"].get("deletionTimestamp"):
                return old
            new = copy.deepcopy(old)
            new["metadata"]["deletionTimestamp"] = store.now_iso()
            new["metadata"]["resourceVersion"] = str(self._next_rv())
            self._store(res, new)
            await self._record(res, "MODIFIED", new)
            return new
        await self._remove(res, old)
        return old

    async def _remove(self, res: ServedResource, obj: dict[str, Any]) -> None:
        """Remove an object for good, then its dependents (background garbage collection)."""
        key = (self._rkey(res), obj["metadata"].get("namespace"), obj["metadata"]["name"])
        gone = copy.deepcopy(obj)
        gone["metadata"]["resourceVersion"] = str(self._next_rv())
        self.objects[key].delete()
        await self._record(res, "DELETED", gone)
        if res.kind == "CustomResourceDefinition":
            for served in from_crd(obj):
                self.registry.kinds.pop(served.key, None)
        uid = obj["metadata"].get("uid")
        for other in list(self.registry.kinds.values()):
            for child in self._live(other):
                if uid and store.owned_by(child, uid):
                    try:
                        await self._delete(other, child["metadata"].get("namespace"), child["metadata"]["name"])
                    except store.ApiError:
                        pass  # already gone

