"""A minimal async client for the plain Kubernetes REST API.

The pod runner and the gateway speak to the API server over HTTP, exactly as a
kubelet or an ingress controller would, so they work against the emulated API
of `forescale_devcluster.apiserver` and against any other API server that
accepts plain HTTP. Only what they need is here: list, get, create, merge
patch (object and status subresource) and delete.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import aiohttp

MERGE_PATCH = "application/merge-patch+json"


class KubeApiError(RuntimeError):
    """The API server refused a request; `status` is its HTTP status."""

    def __init__(self, method: str, path: str, status: int, message: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {message}")
        self.status = status


def collection_path(group_version: str, plural: str, namespace: str | None) -> str:
    """REST path of a collection, e.g. ('apps/v1', 'deployments', 'ml').

    The core group is written 'v1'; `namespace` None means every namespace.
    """
    root = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    if namespace is None:
        return f"{root}/{plural}"
    return f"{root}/namespaces/{quote(namespace, safe='')}/{plural}"


def object_path(group_version: str, plural: str, namespace: str, name: str) -> str:
    """REST path of one named object."""
    return f"{collection_path(group_version, plural, namespace)}/{quote(name, safe='')}"


def selector_string(labels: dict[str, str]) -> str:
    """Equality-based label selector string for `labels` (`k=v,k2=v2`)."""
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


class KubeApi:
    """Plain-HTTP client of one API server at `base_url` (e.g. http://127.0.0.1:PORT)."""

    def __init__(self, base_url: str, *, token: str | None = None, timeout_seconds: float = 10.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"API server URL must start with http:// or https://, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._headers = {"Accept": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        """Close the underlying HTTP session."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        # Created lazily: an aiohttp session must be made inside the running loop.
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(headers=self._headers, timeout=self._timeout)
        return self._session

    async def _request(self, method: str, path: str, *, body: Any = None, params: dict[str, str] | None = None,
                       content_type: str = "application/json", allow_404: bool = False) -> dict | None:
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": content_type} if data is not None else None
        async with self._client().request(method, self.base_url + path, data=data, params=params,
                                          headers=headers) as resp:
            text = await resp.text()
            if resp.status == 404 and allow_404:
                return None
            if resp.status >= 400:
                raise KubeApiError(method, path, resp.status, _message(text))
            return json.loads(text) if text.strip() else {}

    async def list(self, path: str, *, label_selector: str | None = None) -> list[dict]:
        """Items of the collection at `path`, optionally filtered by a label selector."""
        params = {"labelSelector": label_selector} if label_selector else None
        answer = await self._request("GET", path, params=params) or {}
        items = answer.get("items") or []
        if label_selector:
            # Filter again here: an API server that ignores the selector must
            # not make the runner adopt unrelated objects.
            items = [item for item in items if _labels_match(item, label_selector)]
        return items

    async def get(self, path: str) -> dict | None:
        """The object at `path`, or None when it does not exist."""
        return await self._request("GET", path, allow_404=True)

    async def create(self, collection: str, body: dict) -> dict:
        """POST `body` into `collection` and return the stored object."""
        return await self._request("POST", collection, body=body) or {}

    async def patch(self, path: str, patch: dict) -> dict | None:
        """JSON merge-patch the object at `path`; None when it is gone."""
        return await self._request("PATCH", path, body=patch, content_type=MERGE_PATCH, allow_404=True)

    async def patch_status(self, path: str, status: dict) -> dict | None:
        """Merge-patch the status subresource of the object at `path`; None when it is gone."""
        return await self.patch(path + "/status", {"status": status})

    async def delete(self, path: str) -> bool:
        """Delete the object at `path`; False when it was already gone."""
        return await self._request("DELETE", path, allow_404=True) is not None


def _labels_match(item: dict, selector: str) -> bool:
    """Evaluate the equality (`k=v`) and existence (`k`) terms of `selector`."""
    labels = (item.get("metadata") or {}).get("labels") or {}
    for term in filter(None, (part.strip() for part in selector.split(","))):
        key, sep, value = term.partition("=")
        if sep and labels.get(key) != value.lstrip("="):
            return False
        if not sep and key not in labels:
            return False
    return True


def _message(text: str) -> str:
    """The `message` of a Kubernetes Status body, or the raw text, shortened."""
    try:
        return str(json.loads(text).get("message") or text)[:300]
    except (ValueError, AttributeError):
        return text[:300]
