"""Where the official schemas of the objects Forescale writes lie (HTTPRoute,
Gateway, VirtualService, the Prometheus operator's kinds): `../shared/conformance`
beside the traces. They are read from there, never copied into the repository."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import yaml

_REPO = Path(__file__).resolve().parents[2]


def conformance_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """$FORESCALE_CONFORMANCE, else `conformance/` beside $FORESCALE_TRACES, else
    `../shared/conformance` from the repository; None when none exists."""
    env = os.environ if env is None else env
    candidates = []
    if env.get("FORESCALE_CONFORMANCE"):
        candidates.append(Path(env["FORESCALE_CONFORMANCE"]))
    if env.get("FORESCALE_TRACES"):
        candidates.append(Path(env["FORESCALE_TRACES"]).parent / "conformance")
    candidates.append(_REPO.parent / "shared" / "conformance")
    return next((c for c in candidates if (c / "SOURCES.md").is_file()), None)


def load_crd(relative: str, env: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """One official CRD, e.g. `gateway-api/gateway.networking.k8s.io_httproutes.yaml`; None when absent."""
    root = conformance_dir(env)
    if root is None or not (root / relative).is_file():
        return None
    return yaml.safe_load((root / relative).read_text())
