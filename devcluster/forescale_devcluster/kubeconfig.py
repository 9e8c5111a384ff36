"""A kubeconfig that points kubectl, kopf and the operator at the emulated server."""

from __future__ import annotations

from pathlib import Path

import yaml


def write_kubeconfig(path: str | Path, url: str, namespace: str = "default", context: str = "forescale-dev") -> Path:
    """Write a kubeconfig with one cluster/user/context for `url` (plain HTTP, a dummy token)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": url}}],
        # kopf's login handlers want some credentials; the emulator ignores them.
        "users": [{"name": context, "user": {"token": "forescale-dev"}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}],
        "current-context": context,
        "preferences": {},
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path
