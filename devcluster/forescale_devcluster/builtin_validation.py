"""Built-in kinds checked as kube-apiserver checks them: Deployments, Services,
Events and Leases against the official OpenAPI schemas that the `kubernetes-validate`
package ships (strict: an unknown field is an error, as a typo in a field name
would be dropped, unnoticed, by a real server). Without the package the check
is skipped (`available()` says so)."""

from __future__ import annotations

import functools
from typing import Any, Mapping

#: the kinds the operator writes; others (Pods, ConfigMaps) pass unchecked
CHECKED_KINDS = ("Deployment", "Service", "Event", "Lease")


def available() -> bool:
    try:
        import kubernetes_validate  # noqa: F401
    except ImportError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def _version() -> str:
    import kubernetes_validate

    return kubernetes_validate.latest_version()


def builtin_errors(kind: str, obj: Mapping[str, Any]) -> list[str]:
    """`spec.ports.0.port: 'x' is not of type 'integer'`-style messages; empty when valid or unchecked."""
    if kind not in CHECKED_KINDS or not available():
        return []
    import kubernetes_validate

    try:
        kubernetes_validate.validate(dict(obj), _version(), strict=True)
    except kubernetes_validate.ValidationError as exc:
        where = ".".join(str(p) for p in exc.path) or "(root)"
        return [f"{where}: {exc.message}"]
    return []
