"""The API client interface the operator's actuators, routers and handlers use.

Bodies are plain dicts, sent as users wrote them: the typed models of the
kubernetes client reject valid pod templates such as `limits: {nvidia.com/gpu: 1}`.
Every write is a merge patch, a replace or a create; errors are `ApiError`.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol

from .refs import Ref


class KubeApi(Protocol):
    """Just the calls the operator makes. `HttpKubeApi` is the real one."""

    async def get(self, ref: Ref, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""

    async def list(self, ref: Ref, namespace: str | None, label_selector: str | None = None) -> list[dict[str, Any]]:
        """The objects of a kind in a namespace (all namespaces with None)."""

    async def create(self, ref: Ref, namespace: str | None, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create; ApiError(409) when it exists."""

    async def replace(self, ref: Ref, namespace: str | None, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """PUT; ApiError(409) when body's resourceVersion is stale."""

    async def patch(self, ref: Ref, namespace: str | None, name: str, patch: Mapping[str, Any],
                    subresource: str | None = None) -> dict[str, Any]:
        """JSON merge patch of the object or of a subresource (`status`)."""

    async def delete(self, ref: Ref, namespace: str | None, name: str) -> bool:
        """Delete; False when it was already gone."""

    async def served(self, ref: Ref) -> bool:
        """Whether the cluster serves this kind (API discovery)."""
