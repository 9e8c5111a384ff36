"""Where the official schemas of the objects Forescale writes lie (HTTPRoute,
Gateway, VirtualService, the Prometheus operator's kinds): `../shared/conformance`
beside the traces. They are read from there, never copied into the repository."""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path
from typing import Any, Mapping

import yaml

_REPO = Path(__file__).resolve().parents[2]
log = logging.getLogger("forescale.devcluster")


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
    return _read(str(root / relative))


@functools.lru_cache(maxsize=16)
def _read(path: str) -> dict[str, Any]:
    # Every emulated API server of a test run reads the same files; parse them once (callers only read).
    return yaml.safe_load(Path(path).read_text())


#: plural -> (file under the conformance folder, version the emulator serves)
ROUTE_CRDS = {
    "httproutes": ("gateway-api/gateway.networking.k8s.io_httproutes.yaml", "v1"),
    "virtualservices": ("istio/networking.istio.io_virtualservices.yaml", "v1"),
}


def route_schemas(env: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """plural -> the official openAPIV3Schema (CEL rules included) of each route kind
    found; a warning names what is missing, and those routes are stored unchecked."""
    found = {}
    for plural, (relative, version) in ROUTE_CRDS.items():
        crd = load_crd(relative, env)
        if crd is None:
            log.warning("official CRD %s not found (set FORESCALE_CONFORMANCE to the conformance folder): "
                        "%s are stored without schema or CEL checks", relative, plural)
            continue
        found[plural] = next(v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["name"] == version)
    return found
