"""Server settings: command-line flags plus the pod environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping

from forescale_profiles.precision import PRECISIONS


@dataclass(frozen=True)
class Limits:
    """Bounds on what one request may ask for; anything over them is a 4xx."""

    #: largest accepted request body
    max_body_bytes: int = 1 << 20
    #: most inputs (embeddings) or prompts (completions) in one request
    max_items: int = 256
    #: longest single input, in characters (the tokenizer truncates to the model's context anyway)
    max_input_chars: int = 8192
    #: most tokens a completion may ask for
    max_new_tokens: int = 256


@dataclass(frozen=True)
class Labels:
    """The labels every metric series carries, from the pod's environment."""

    deployment: str = "local"
    pool: str = "a"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Labels":
        """Read FORESCALE_DEPLOYMENT and FORESCALE_POOL (defaults: local, a)."""
        env = os.environ if env is None else env
        return cls(deployment=env.get("FORESCALE_DEPLOYMENT") or "local", pool=env.get("FORESCALE_POOL") or "a")


def default_precision(env: Mapping[str, str] | None = None) -> str:
    """FORESCALE_PRECISION when the operator set it on the pod, else fp32."""
    env = os.environ if env is None else env
    value = (env.get("FORESCALE_PRECISION") or "fp32").lower()
    if value not in PRECISIONS:
        raise ValueError(f"FORESCALE_PRECISION={value!r} is not one of {', '.join(PRECISIONS)}")
    return value


@dataclass(frozen=True)
class PrecisionChoice:
    """The precision the server starts at, and the one it was asked for when it had to fall back."""

    #: the precision in force at start-up
    effective: str
    #: what --precision (or FORESCALE_PRECISION) asked for, when this hardware cannot run it; None otherwise
    requested: str | None = None


def choose_precision(requested: str, supported: tuple[str, ...], fallback: str | None, *, source: str = "--precision",
                     hardware: str = "this hardware") -> PrecisionChoice:
    """`requested` when this backend runs it; else `fallback` when one was given and runs; else a ValueError.

    Why fail rather than start: a server that stays up at a precision it cannot run answers /readyz 503 for
    ever, and Kubernetes shows a pod that is Running but never Ready, with the reason only in its log. An
    exit at start-up with the reason puts it in the pod's status (CrashLoopBackOff, the last log line).
    The fallback is opt-in so that nobody serves fp32 at half the speed they sized for without asking.
    """
    if requested in supported:
        return PrecisionChoice(requested)
    runs = ", ".join(supported)
    if fallback is None:
        raise ValueError(f"{source} {requested} cannot run on {hardware}, which runs {runs}; "
                         f"choose one of those, or add --precision-fallback fp32 to start at fp32 instead")
    if fallback not in supported:
        raise ValueError(f"{source} {requested} cannot run on {hardware}, nor can --precision-fallback {fallback}; "
                         f"it runs {runs}")
    return PrecisionChoice(fallback, requested=requested)


@dataclass(frozen=True)
class BatchingConfig:
    """Dynamic batching knobs."""

    #: largest batch sent to the model
    max_batch: int = 32
    #: the longest a request waits for others to join its batch
    max_wait_s: float = 0.005
    #: below this expected batch size the batch goes at once (low traffic gains nothing by waiting)
    min_batch: int = 4
    #: queued items beyond which requests are answered 429
    max_queue: int = 1024


@dataclass(frozen=True)
class CacheConfig:
    """Result-cache policy; see `result_cache.make_cache`."""

    policy: str = "lru"
    capacity: int = 10_000
    window_s: float = 300.0
    keep_turns: int = 2


@dataclass(frozen=True)
class ConnectionLimits:
    """What one client connection may hold (`connection_guard.py`)."""

    #: a request head (request line and headers) must arrive within this many seconds of its first byte
    header_timeout_s: float = 30.0
    #: and its body within this many seconds of the head
    body_timeout_s: float = 30.0
    #: open connections beyond which new ones are closed at accept; None: under the file-descriptor limit
    max_connections: int | None = None
    #: an idle keep-alive connection is closed after this many seconds
    keepalive_timeout_s: float = 75.0


@dataclass(frozen=True)
class ServerConfig:
    """Everything `forescale serve` was told."""

    model: str = "minilm"
    precision: str = "fp32"
    #: what was asked for when the server fell back to `precision` (--precision-fallback); None: no fallback
    requested_precision: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    enable_faults: bool = False
    emulate_gpu: str | None = None
    device: str = "auto"
    threads: int = 0
    limits: Limits = field(default_factory=Limits)
    batching: BatchingConfig = field(default_factory=BatchingConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)
    labels: Labels = field(default_factory=Labels)
    #: ceiling on the memory `/admin/faults {"leak_mb": N}` may hold in total
    max_leak_mb: int = 512
