"""Calls to the model servers' admin API during the playbook.

The operator finds a pool's ready pods through the Kubernetes API and posts to
each one at `http://<podIP>:<port>`: the container port named `http` (or the
`forescale.io/admin-port` annotation, or the first container port). The bearer
token comes from the Secret named by FORESCALE_ADMIN_TOKEN_SECRET; it is never
logged, and never appears in results, events, status or snapshots.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import aiohttp

log = logging.getLogger(__name__)

ADMIN_PORT_ANNOTATION = "forescale.io/admin-port"


def pod_is_ready(pod: Mapping[str, Any]) -> bool:
    """Running and with condition Ready=True, as the kubelet reports it."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def admin_port_problem(pod: Mapping[str, Any]) -> str | None:
    """Why the pod's `forescale.io/admin-port` annotation cannot be used, or None when it is absent or valid."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(ADMIN_PORT_ANNOTATION)
    if value is None or _port(value) is not None:
        return None
    return f"annotation {ADMIN_PORT_ANNOTATION}={str(value)[:40]!r} is not a port number (1-65535)"


def _port(value: Any) -> int | None:
    """A TCP port from an annotation or a containerPort, or None."""
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 65535:
        return None
    return int(text)


def pod_endpoint(pod: Mapping[str, Any]) -> str | None:
    """`http://ip:port` of a pod's server, or None when it has no IP or usable port yet.

    A pod whose admin-port annotation is not a port is skipped for admin calls
    (see `admin_port_problem`), rather than guessed at: the annotation exists
    because the default port is not the admin one.
    """
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        return None
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if ADMIN_PORT_ANNOTATION in annotations:
        port = _port(annotations[ADMIN_PORT_ANNOTATION])
    else:
        ports = [p for c in (pod.get("spec") or {}).get("containers") or [] for p in c.get("ports") or []]
        named = [p for p in ports if p.get("name") == "http"]
        chosen = (named or ports or [None])[0]
        port = _port(chosen.get("containerPort")) if chosen else None
    if port is None:
        return None
    host = f"[{ip}]" if ":" in ip else ip
    return f"http://{host}:{port}"


@dataclass(frozen=True)
class AdminResult:
    """One pod's answer. `detail` is the server's error message or the failure; never the token."""

    endpoint: str
    ok: bool
    status: int | None
    detail: str = ""
    body: Any = None


class AdminClient:
    """Posts one admin call to many pods at once, with a per-call timeout."""

    def __init__(self, token: str | None, *, timeout: float = 5.0, session: aiohttp.ClientSession | None = None) -> None:
        self._token = token
        self.timeout = timeout
        self._session = session

    @property
    def enabled(self) -> bool:
        return bool(self._token)

    async def post_all(self, endpoints: Iterable[str], path: str, body: Mapping[str, Any]) -> list[AdminResult]:
        """POST `body` to `path` on every endpoint; never raises for one pod's failure."""
        endpoints = list(endpoints)
        if not endpoints:
            return []
        if not self._token:
            return [AdminResult(e, False, None, "no admin token: set FORESCALE_ADMIN_TOKEN_SECRET") for e in endpoints]
        own = self._session is None
        session = self._session or aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout))
        try:
            return list(await asyncio.gather(*(self._post(session, e, path, body) for e in endpoints)))
        finally:
            if own:
                await session.close()

    async def _post(self, session: aiohttp.ClientSession, endpoint: str, path: str, body: Mapping[str, Any]) -> AdminResult:
        headers = {"Authorization": f"Bearer {self._token}"}
        try:
            async with session.post(endpoint + path, json=dict(body), headers=headers) as resp:
                try:
                    payload = await resp.json(content_type=None)
                except (ValueError, aiohttp.ContentTypeError):
                    payload = None
                if resp.status == 200:
                    return AdminResult(endpoint, True, 200, body=payload)
                message = payload.get("error", {}).get("message", "") if isinstance(payload, dict) else ""
                return AdminResult(endpoint, False, resp.status, message or resp.reason or "")
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            return AdminResult(endpoint, False, None, f"{type(exc).__name__}: {exc}"[:200])


def summarize(results: list[AdminResult]) -> str:
    """`3/3 pods` or `2/3 pods; http://10.0.0.7:8000: 404 admin API is off` for events and logs."""
    ok = sum(r.ok for r in results)
    text = f"{ok}/{len(results)} pods"
    failed = [r for r in results if not r.ok]
    if failed:
        first = failed[0]
        text += f"; {first.endpoint}: {first.status or 'error'} {first.detail}".rstrip()
    return text
