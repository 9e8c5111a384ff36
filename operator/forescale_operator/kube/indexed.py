"""`IndexedReads`: a `KubeApi` whose reads of Forescale's children and pods come from kopf's indexes.

A steady-state tick used to GET both Deployments, LIST the Services and LIST
the pods: four requests per resource per step, most of the load on the API
server at 1,000 resources (docs/operator-scale.md). kopf already watches
those kinds for the indexes registered in registration.py, so the same
objects are served here from the watch streams, as client-go's listers serve
them from informers. Every other call, and every write, goes to the API.

What is served from an index, and what is not:
- `get` of a Deployment labelled `forescale.io/deployment` (the pools Forescale
  made). A miss (an adopted targetRef, which carries the user's labels, or a
  Deployment not seen yet) is asked of the API: a miss never means "absent".
- `list` of pods or Services by `forescale.io/deployment=<name>` (more
  equality terms filter the index's entries). An empty entry is an answer:
  the index holds every labelled object of its kind once kopf has listed it.
- `get` of a Secret (the AdminReady check reads the admin token's every tick):
  RBAC grants Secrets by name only, never list or watch, so there is no index;
  each (namespace, name) is instead read at most once per `secret_ttl_s`
  (60 s) and shared by the namespace's resources. A rotated token shows
  within that time.
- Nothing else: a selector with other operators (`!=`, `in`, `!`) or without
  the label, an all-namespaces list, any other kind.

The objects returned are the index's own copies: callers read them, never
change them.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Mapping

from .client import KubeApi
from .refs import DEPLOYMENTS, PODS, SECRETS, SERVICES, Ref

#: the label every child and pod of an InferenceDeployment carries (children.LABEL_DEPLOYMENT; kube sits below children)
OWNER_LABEL = "forescale.io/deployment"

#: an index as kopf hands it to a handler (`kopf.Index`): a key -> the values of every object indexed under it
Index = Mapping[Any, Iterable[Mapping[str, Any]]]


def by_name(namespace: str | None, name: str | None, body: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """A Deployment's index entry: its (namespace, name) -> a plain copy of it."""
    return {(namespace or "", name or ""): plain(body)}


def by_owner(namespace: str | None, labels: Mapping[str, str], body: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """A pod's or Service's index entry: (namespace, its InferenceDeployment's name) -> a plain copy of it."""
    return {(namespace or "", labels.get(OWNER_LABEL, "")): plain(body)}


def plain(value: Any) -> Any:
    """A deep copy of kopf's body views as plain dicts and lists (a body is replaced, not changed, by a watch event)."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _equalities(selector: str | None) -> dict[str, str] | None:
    """`k=v,k2=v2` as a dict; None for anything else (set-based terms, `!=`, a bare key)."""
    if not selector:
        return None
    terms: dict[str, str] = {}
    for term in selector.split(","):
        key, eq, value = term.strip().partition("=")
        value = value[1:] if value.startswith("=") else value  # `k==v` is an equality too
        if not eq or not key or any(c in key + value for c in " ()!="):
            return None
        terms[key] = value
    return terms


class IndexedReads:
    """Reads of Deployments, pods and Services served from kopf's indexes; everything else asks `api`.

    An index is None until kopf has handed it over (it does so only once it has listed the kind): `synced` is
    False then, and the tick waits rather than read children and pods that seem to be missing.
    """

    def __init__(self, api: KubeApi, *, deployments: Index | None, pods: Index | None, services: Index | None,
                 secret_ttl_s: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 secrets: dict[tuple[str, str], tuple[float, dict[str, Any] | None]] | None = None) -> None:
        self.api = api
        self._indexes: dict[Ref, Index | None] = {DEPLOYMENTS: deployments, PODS: pods, SERVICES: services}
        self._secret_ttl_s, self._clock = secret_ttl_s, clock
        #: (namespace, name) -> (when read, the Secret or None): pass one dict to share it between readers
        self._secrets = secrets if secrets is not None else {}

    @property
    def synced(self) -> bool:
        return all(index is not None for index in self._indexes.values())

    @property
    def not_synced(self) -> str:
        """Which indexes are not there yet ("" when all are)."""
        return ", ".join(ref.plural for ref, index in self._indexes.items() if index is None)

    async def get(self, ref: Ref, namespace: str | None, name: str) -> dict[str, Any] | None:
        if ref == SECRETS and namespace:
            return await self._secret(namespace, name)
        index = self._indexes.get(ref) if ref == DEPLOYMENTS else None
        if index is not None and namespace:
            for found in index.get((namespace, name)) or ():
                return found  # type: ignore[return-value]
        return await self.api.get(ref, namespace, name)

    async def _secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Secret as read within the last `secret_ttl_s`, else read now (an error is raised, not kept)."""
        now = self._clock()
        held = self._secrets.get((namespace, name))
        if held is not None and now - held[0] < self._secret_ttl_s:
            return held[1]
        found = await self.api.get(SECRETS, namespace, name)
        self._secrets[(namespace, name)] = (now, found)
        return found

    async def list(self, ref: Ref, namespace: str | None, label_selector: str | None = None) -> list[dict[str, Any]]:
        index = self._indexes.get(ref) if ref in (PODS, SERVICES) else None
        terms = _equalities(label_selector)
        if index is None or not namespace or terms is None or OWNER_LABEL not in terms:
            return await self.api.list(ref, namespace, label_selector)
        found = index.get((namespace, terms[OWNER_LABEL])) or ()
        return [obj for obj in found  # type: ignore[misc]
                if all(((obj.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in terms.items())]

    async def create(self, ref: Ref, namespace: str | None, body: Mapping[str, Any]) -> dict[str, Any]:
        return await self.api.create(ref, namespace, body)

    async def replace(self, ref: Ref, namespace: str | None, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return await self.api.replace(ref, namespace, name, body)

    async def patch(self, ref: Ref, namespace: str | None, name: str, patch: Mapping[str, Any],
                    subresource: str | None = None) -> dict[str, Any]:
        return await self.api.patch(ref, namespace, name, patch, subresource)

    async def delete(self, ref: Ref, namespace: str | None, name: str) -> bool:
        return await self.api.delete(ref, namespace, name)

    async def served(self, ref: Ref) -> bool:
        return await self.api.served(ref)
