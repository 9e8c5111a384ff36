"""`HttpKubeApi`: the `KubeApi` over aiohttp, with the credentials of the current kubeconfig.

Credentials come from `kubernetes.config` (in-cluster service account, or
KUBECONFIG / ~/.kube/config with tokens, client certificates, exec plugins),
the same source kopf's own login uses, so both reach the same cluster.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from typing import Any, Mapping

import aiohttp

from .errors import ApiError, ApiUnavailable
from .refs import Ref


class Connection:
    """Where the API server is and how to authenticate to it."""

    def __init__(self, server: str, *, token_source=None, ssl_context: ssl.SSLContext | bool | None = None,
                 user_agent: str = "forescale-operator") -> None:
        self.server = server.rstrip("/")
        self._token_source = token_source
        self.ssl = ssl_context
        self.user_agent = user_agent

    def headers(self) -> dict[str, str]:
        headers = {"User-Agent": self.user_agent, "Accept": "application/json"}
        token = self._token_source() if self._token_source else None
        if token:
            headers["Authorization"] = token if token.lower().startswith(("bearer ", "basic ")) else f"Bearer {token}"
        return headers

    @classmethod
    def from_environment(cls, user_agent: str = "forescale-operator") -> "Connection":
        """In-cluster config when running in a pod; KUBECONFIG or ~/.kube/config otherwise."""
        from kubernetes import client as k8s_client, config as k8s_config  # heavy: only at start-up

        configuration = k8s_client.Configuration()
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
        except k8s_config.ConfigException:
            k8s_config.load_kube_config(client_configuration=configuration)
        context: ssl.SSLContext | bool | None = None
        if configuration.host.startswith("https"):
            if not configuration.verify_ssl:
                context = False
            else:
                context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
                if configuration.cert_file:
                    context.load_cert_chain(configuration.cert_file, configuration.key_file)
        return cls(configuration.host, token_source=lambda: configuration.get_api_key_with_prefix("authorization"),
                   ssl_context=context, user_agent=user_agent)


class HttpKubeApi:
    """`KubeApi` over HTTP. One aiohttp session; create it inside the running loop."""

    def __init__(self, connection: Connection, *, timeout: float = 30.0, max_in_flight: int = 64) -> None:
        self._conn = connection
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        # Requests beyond this wait here, outside the timeout. Without it, 1,000
        # resources starting at once queue thousands of requests in aiohttp's pool,
        # where the wait counts against `timeout`: they time out and are retried,
        # and the retries keep the herd going (bench/operator_scale.py).
        self._slots = asyncio.Semaphore(max_in_flight)

    async def _request(self, method: str, path: str, *, body: Any = None, params: Mapping[str, str] | None = None,
                       content_type: str = "application/json") -> tuple[int, Any]:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        headers = self._conn.headers()
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body)
        url = self._conn.server + path
        try:
            async with self._slots, self._session.request(method, url, data=data, params=params, headers=headers,
                                                          ssl=self._conn.ssl) as response:
                text = await response.text()
                payload = json.loads(text) if text.strip() else None
                if response.status >= 400:
                    retry_after = response.headers.get("Retry-After")
                    reason = payload.get("reason", "") if isinstance(payload, dict) else ""
                    message = payload.get("message", text) if isinstance(payload, dict) else text
                    raise ApiError(response.status, reason or response.reason or "", message,
                                   retry_after=float(retry_after) if retry_after and retry_after.isdigit() else None,
                                   method=method, path=path)
                return response.status, payload
        except (aiohttp.ClientConnectionError, asyncio.TimeoutError) as exc:
            raise ApiUnavailable(f"{type(exc).__name__}: {exc}", method=method, path=path) from exc
        except json.JSONDecodeError as exc:
            raise ApiError(502, "BadGateway", f"the API server answered non-JSON: {exc}", method=method, path=path) from exc

    async def get(self, ref: Ref, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            return (await self._request("GET", ref.path(namespace, name)))[1]
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    async def list(self, ref: Ref, namespace: str | None, label_selector: str | None = None) -> list[dict[str, Any]]:
        params = {"labelSelector": label_selector} if label_selector else None
        _, payload = await self._request("GET", ref.path(namespace), params=params)
        return list((payload or {}).get("items") or [])

    async def create(self, ref: Ref, namespace: str | None, body: Mapping[str, Any]) -> dict[str, Any]:
        return (await self._request("POST", ref.path(namespace), body=body))[1]

    async def replace(self, ref: Ref, namespace: str | None, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return (await self._request("PUT", ref.path(namespace, name), body=body))[1]

    async def patch(self, ref: Ref, namespace: str | None, name: str, patch: Mapping[str, Any],
                    subresource: str | None = None) -> dict[str, Any]:
        return (await self._request("PATCH", ref.path(namespace, name, subresource), body=patch,
                                    content_type="application/merge-patch+json"))[1]

    async def delete(self, ref: Ref, namespace: str | None, name: str) -> bool:
        try:
            await self._request("DELETE", ref.path(namespace, name), body={"propagationPolicy": "Background"})
            return True
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise

    async def served(self, ref: Ref) -> bool:
        # Discovery is asked each time: a CRD installed (or removed) while the
        # operator runs must be noticed without a restart. It is one small GET.
        path = f"/apis/{ref.group}/{ref.version}" if ref.group else f"/api/{ref.version}"
        try:
            _, payload = await self._request("GET", path)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return any(r.get("name") == ref.plural for r in (payload or {}).get("resources") or [])

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
