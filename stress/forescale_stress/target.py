"""The one URL a run may touch: parsing, the endpoint kind, the loopback test
for chaos, and the probe that checks the URL speaks the OpenAI API before any
load is sent."""

from __future__ import annotations

import ipaddress
import json
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp

from forescale_stress.errors import StressError

ENDPOINT_PATHS = {"embeddings": "/v1/embeddings", "completions": "/v1/completions"}


@dataclass(frozen=True)
class Target:
    """The load URL and the origin its admin URLs are derived from."""

    url: str
    origin: str
    host: str
    kind: str  # "embeddings" | "completions"

    @property
    def is_loopback(self) -> bool:
        """True for localhost and loopback IP literals. Host names other than
        `localhost` are not resolved: a name could point anywhere tomorrow."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def admin_url(self, path: str) -> str:
        """An admin URL on the target's own origin (never another host)."""
        return self.origin + path


def parse_target(url: str) -> Target:
    """Validate `--url`. A bare origin (`http://host:port`) means its
    `/v1/embeddings`; otherwise the path must end in `/embeddings` or
    `/completions` (prefixes such as `/openai/v1/...` are kept)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port  # raises ValueError on a bad port
    except ValueError as exc:
        raise StressError(f"--url {url!r} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise StressError(f"--url {url!r} must be an http:// or https:// URL with a host")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise StressError(f"--url {url!r} must not carry a query, fragment or credentials")
    host = parts.hostname
    netloc = f"[{host}]" if ":" in host else host
    origin = f"{parts.scheme}://{netloc}" + (f":{port}" if port else "")
    path = parts.path.rstrip("/")
    if path in ("", "/v1"):
        path = ENDPOINT_PATHS["embeddings"]
    kind = next((k for k in ENDPOINT_PATHS if path.endswith("/" + k)), None)
    if kind is None:
        raise StressError(
            f"--url {url!r} is not an OpenAI endpoint: its path must end in /v1/embeddings or /v1/completions"
        )
    return Target(url=origin + path, origin=origin, host=host, kind=kind)


def request_body(kind: str, model: str, text: str) -> bytes:
    """The JSON body of one request of the given kind."""
    if kind == "embeddings":
        body = {"input": [text], "model": model}
    else:
        body = {"prompt": text, "model": model, "max_tokens": 16}
    return json.dumps(body, separators=(",", ":")).encode()


def _looks_right(kind: str, payload: object) -> bool:
    if not isinstance(payload, dict):
        return False
    if kind == "embeddings":
        data = payload.get("data")
        return isinstance(data, list) and bool(data) and isinstance(data[0], dict) and "embedding" in data[0]
    choices = payload.get("choices")
    return isinstance(choices, list) and bool(choices)


async def probe(target: Target, model: str, timeout: float) -> float:
    """Send one request and check the answer has the OpenAI shape. Returns its
    latency in ms; raises StressError for an unreachable or non-OpenAI URL."""
    body = request_body(target.kind, model, "forescale stress probe")
    headers = {"Content-Type": "application/json"}
    started = time.perf_counter()
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
            async with session.post(target.url, data=body, headers=headers, allow_redirects=False) as resp:
                raw = await resp.read()
                status = resp.status
    except TimeoutError:
        raise StressError(f"cannot reach {target.url}: no answer within {timeout:g}s") from None
    except aiohttp.ClientConnectorError as exc:
        reason = exc.os_error.strerror or str(exc.os_error) or type(exc).__name__
        raise StressError(f"cannot reach {target.url}: {reason}") from None
    except aiohttp.ClientError as exc:
        reason = str(exc) or type(exc).__name__
        raise StressError(f"cannot reach {target.url}: {reason}") from None
    latency = (time.perf_counter() - started) * 1000.0
    if status != 200:
        raise StressError(
            f"{target.url} is not an OpenAI {target.kind} endpoint: a test request got HTTP {status}"
        )
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = None
    if not _looks_right(target.kind, payload):
        expected = '"data": [{"embedding": ...}]' if target.kind == "embeddings" else '"choices": [...]'
        raise StressError(f"{target.url} is not an OpenAI {target.kind} endpoint: its answer has no {expected}")
    return latency
