"""Operator-wide settings, read once from `FORESCALE_*` environment variables and validated.

A resource's spec overrides these (e.g. `spec.metrics.prometheusUrl`). A bad
value stops the operator at start-up with a message naming the variable;
`ConfigError` carries it. The Helm chart sets exactly these names.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import zlib
from dataclasses import dataclass
from typing import Mapping

_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
#: a namespace name is a DNS-1123 label: no dots (`kubectl create namespace ml.team` is refused)
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class ConfigError(ValueError):
    """A setting that cannot be used; the message names the variable."""


@dataclass(frozen=True)
class Config:
    #: FORESCALE_PROMETHEUS_URL: where PromQL queries go unless a spec names its own (http(s) URL; empty = none)
    prometheus_url: str | None = None
    #: FORESCALE_NAMESPACES: comma-separated namespaces to watch; empty = all namespaces
    namespaces: tuple[str, ...] = ()
    #: FORESCALE_LOG_LEVEL: DEBUG, INFO, WARNING, ERROR or CRITICAL
    log_level: str = "INFO"
    #: FORESCALE_ADMIN_TOKEN_SECRET: `<secret>/<key>` read in each resource's namespace for the model servers' admin API
    admin_token_secret: tuple[str, str] | None = None
    #: FORESCALE_ADMIN_TOKEN_COPY_FROM: the namespace holding that Secret (the chart's release namespace), copied
    #: from there into each resource's namespace where it is missing; empty = the user put it in each namespace
    admin_token_copy_from: str | None = None
    #: FORESCALE_METRICS_PORT: port of the operator's own Prometheus metrics
    metrics_port: int = 8080
    #: FORESCALE_HEALTH_PORT: port of kopf's liveness endpoint `/healthz`
    health_port: int = 8081
    #: FORESCALE_PEERING: name of the KopfPeering/ClusterKopfPeering object the replicas share;
    #: set but empty (FORESCALE_PEERING="") runs standalone: one replica, no peering at all
    peering: str | None = "forescale"
    #: POD_NAME: this replica's name (the Downward API); its hash is the peering priority
    pod_name: str = ""
    #: FORESCALE_PRIORITY: explicit peering priority, overriding the one derived from POD_NAME
    priority: int | None = None
    #: FORESCALE_MIN_LOOP_SECONDS: floor under every resource's forecast.stepSeconds (protects the API server)
    min_loop_seconds: float = 1.0
    #: FORESCALE_DIAGNOSIS_NOW_SECONDS: the incident diagnosis's "now" window, the last N seconds (10..3600)
    diagnosis_now_seconds: int = 30
    #: FORESCALE_DIAGNOSIS_BEFORE_SECONDS: the window before it that "now" is compared with (the issue's 10
    #: minutes); at least the "now" window, at most a day. The diagnosis campaign shortens both (bench/diagnosis.py)
    diagnosis_before_seconds: int = 600
    #: FORESCALE_LEASE_SECONDS: leaseDurationSeconds of the per-namespace coordination Lease every operator takes
    #: (leases.py): how long a crashed holder blocks the others. 0 turns coordination off (one operator only)
    lease_seconds: int = 30
    #: FORESCALE_LEASE_RENEW_SECONDS: how often the holder renews and the others retry; at most a third of the duration
    lease_renew_seconds: float = 5.0

    @property
    def peering_priority(self) -> int:
        """A distinct priority per replica: kopf freezes every replica when two share one."""
        if self.priority is not None:
            return self.priority
        identity = self.pod_name or socket.gethostname()
        return zlib.crc32(identity.encode()) % 1_000_000 + 1

    @property
    def logging_level(self) -> int:
        return getattr(logging, self.log_level)


def _port(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        port = int(raw)
    except ValueError:
        raise ConfigError(f"{name}: must be a port number, got {raw!r}") from None
    if not 1 <= port <= 65535:
        raise ConfigError(f"{name}: must be 1..65535, got {port}")
    return port


def _lease(env: Mapping[str, str]) -> tuple[int, float]:
    """FORESCALE_LEASE_SECONDS (0 or 1..3600, whole seconds: the Lease field is an integer) and
    FORESCALE_LEASE_RENEW_SECONDS (0.1 .. a third of the duration, so the holder gets at least two tries
    inside its renew deadline of two thirds)."""
    raw = env.get("FORESCALE_LEASE_SECONDS", "").strip()
    seconds = 30
    if raw:
        try:
            seconds = int(raw)
        except ValueError:
            raise ConfigError(f"FORESCALE_LEASE_SECONDS: must be a whole number of seconds, got {raw!r}") from None
        if not 0 <= seconds <= 3600:
            raise ConfigError(f"FORESCALE_LEASE_SECONDS: must be 0 (off) or 1..3600, got {seconds}")
    raw = env.get("FORESCALE_LEASE_RENEW_SECONDS", "").strip()
    renew = min(5.0, seconds / 3) if seconds else 5.0
    if raw:
        try:
            renew = float(raw)
        except ValueError:
            raise ConfigError(f"FORESCALE_LEASE_RENEW_SECONDS: must be a number, got {raw!r}") from None
        if not 0.1 <= renew <= 1200 or (seconds and renew > seconds / 3):
            raise ConfigError(f"FORESCALE_LEASE_RENEW_SECONDS: must be 0.1 .. a third of FORESCALE_LEASE_SECONDS "
                              f"({seconds / 3:g}), got {renew:g}")
    return seconds, renew


def check_namespaces(namespaces: tuple[str, ...], source: str) -> None:
    """ConfigError naming `source` (the variable or flag) at the first name that is no namespace name."""
    for namespace in namespaces:
        if not _DNS_LABEL.fullmatch(namespace) or len(namespace) > 63:
            raise ConfigError(f"{source}: {namespace!r} is not a valid namespace name")


def load_config(env: Mapping[str, str] | None = None) -> Config:
    """Read and validate the settings; raises ConfigError naming the first bad variable."""
    env = os.environ if env is None else env

    url = env.get("FORESCALE_PROMETHEUS_URL", "").strip() or None
    if url is not None and not url.startswith(("http://", "https://")):
        raise ConfigError(f"FORESCALE_PROMETHEUS_URL: must be an http(s) URL, got {url!r}")

    namespaces = tuple(n.strip() for n in env.get("FORESCALE_NAMESPACES", "").split(",") if n.strip())
    check_namespaces(namespaces, "FORESCALE_NAMESPACES")

    level = env.get("FORESCALE_LOG_LEVEL", "INFO").strip().upper() or "INFO"
    if level not in _LEVELS:
        raise ConfigError(f"FORESCALE_LOG_LEVEL: must be one of {', '.join(_LEVELS)}, got {level!r}")

    secret = None
    raw_secret = env.get("FORESCALE_ADMIN_TOKEN_SECRET", "").strip()
    if raw_secret:
        name, sep, key = raw_secret.partition("/")
        if not sep or not name or not key or "/" in key:
            raise ConfigError(f"FORESCALE_ADMIN_TOKEN_SECRET: must be <secret name>/<key>, got {raw_secret!r}")
        secret = (name, key)

    copy_from = env.get("FORESCALE_ADMIN_TOKEN_COPY_FROM", "").strip() or None
    if copy_from is not None:
        if secret is None:
            raise ConfigError("FORESCALE_ADMIN_TOKEN_COPY_FROM: needs FORESCALE_ADMIN_TOKEN_SECRET, the Secret to copy")
        check_namespaces((copy_from,), "FORESCALE_ADMIN_TOKEN_COPY_FROM")

    peering: str | None = env.get("FORESCALE_PEERING", "forescale").strip() or None
    if peering is not None and not _DNS_NAME.match(peering):
        raise ConfigError(f"FORESCALE_PEERING: {peering!r} is not a valid object name")

    priority = None
    raw_priority = env.get("FORESCALE_PRIORITY", "").strip()
    if raw_priority:
        try:
            priority = int(raw_priority)
        except ValueError:
            raise ConfigError(f"FORESCALE_PRIORITY: must be an integer, got {raw_priority!r}") from None

    raw_min = env.get("FORESCALE_MIN_LOOP_SECONDS", "").strip()
    min_loop = 1.0
    if raw_min:
        try:
            min_loop = float(raw_min)
        except ValueError:
            raise ConfigError(f"FORESCALE_MIN_LOOP_SECONDS: must be a number, got {raw_min!r}") from None
        if not 0.1 <= min_loop <= 3600:
            raise ConfigError(f"FORESCALE_MIN_LOOP_SECONDS: must be 0.1..3600, got {min_loop}")

    now_s = _seconds(env, "FORESCALE_DIAGNOSIS_NOW_SECONDS", 30, 10, 3600)
    before_s = _seconds(env, "FORESCALE_DIAGNOSIS_BEFORE_SECONDS", 600, now_s, 86400)
    lease_seconds, lease_renew = _lease(env)

    metrics_port = _port(env, "FORESCALE_METRICS_PORT", 8080)
    health_port = _port(env, "FORESCALE_HEALTH_PORT", 8081)
    if metrics_port == health_port:
        raise ConfigError(f"FORESCALE_HEALTH_PORT: must differ from FORESCALE_METRICS_PORT ({metrics_port})")

    return Config(prometheus_url=url, namespaces=namespaces, log_level=level, admin_token_secret=secret,
                  admin_token_copy_from=copy_from,
                  metrics_port=metrics_port, health_port=health_port, peering=peering,
                  pod_name=env.get("POD_NAME", "").strip(), priority=priority, min_loop_seconds=min_loop,
                  diagnosis_now_seconds=now_s, diagnosis_before_seconds=before_s,
                  lease_seconds=lease_seconds, lease_renew_seconds=lease_renew)


def _seconds(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """A whole number of seconds in [low, high], or the default when unset."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}: must be a whole number of seconds, got {raw!r}") from None
    if not low <= value <= high:
        raise ConfigError(f"{name}: must be {low}..{high}, got {value}")
    return value
