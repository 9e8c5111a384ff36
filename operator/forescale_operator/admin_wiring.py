"""Where a pod template's model server gets its admin token from, read the way the server reads it.

Why: the playbook's admin calls (precision fallback, cache warm-up, debug
logging) carry the operator's token. The pools Forescale creates get it by
construction (children.py mounts the Secret and sets FORESCALE_ADMIN_TOKEN_FILE);
a Deployment it adopts (`targetRef`) is never edited, so its template may have
no token, a token file with no volume under it (the server then exits at
start-up), or a token from another Secret. This module says which, from the
template alone; observe/admin_readiness.py reads the Secrets it names and compares.

The server's rule (forescale_server.admin_token): FORESCALE_ADMIN_TOKEN_FILE
wins over FORESCALE_ADMIN_TOKEN; with neither the admin API is off (404).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any, Mapping

ENV_FILE = "FORESCALE_ADMIN_TOKEN_FILE"
ENV_TOKEN = "FORESCALE_ADMIN_TOKEN"


def usable_token(text: str) -> str | None:
    """The model server's rule (forescale_server.admin_token.clean_token): strip surrounding
    whitespace; nothing left, or anything but printable ASCII, is no token."""
    token = text.strip() if isinstance(text, str) else ""
    if not token or any(not 0x20 <= ord(c) <= 0x7E for c in token):
        return None
    return token


@dataclass(frozen=True)
class SecretKey:
    """One key of one Secret in the pod's namespace."""

    name: str
    key: str

    def describe(self) -> str:
        return f"Secret {self.name} (key {self.key})"


@dataclass(frozen=True)
class PodToken:
    """What one pod template gives its model server as the admin token: exactly one of the fields below
    is set, or none when `problem` says why the pods have no usable token."""

    #: the container that reads the token (the first one naming a token variable, else the first one)
    container: str
    #: the token is this Secret key (a mounted file or an env secretKeyRef)
    secret: SecretKey | None = None
    #: the token is written literally in the template (compared, never printed)
    literal: str | None = None
    #: the pods have no token the operator could send; says what is missing
    problem: str | None = None
    #: the token comes from somewhere Forescale cannot read (a CSI volume, a ConfigMap): not judged
    unverifiable: str | None = None


def _env(container: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    return next((e for e in container.get("env") or [] if isinstance(e, Mapping) and e.get("name") == name), None)


def _mount_for(container: Mapping[str, Any], path: str) -> tuple[Mapping[str, Any], str] | None:
    """The volumeMount holding `path` (the deepest one) and the file's path inside that volume."""
    best: tuple[Mapping[str, Any], str] | None = None
    for mount in container.get("volumeMounts") or []:
        if not isinstance(mount, Mapping):
            continue
        where = posixpath.normpath(str(mount.get("mountPath") or "/"))
        if mount.get("subPath"):
            # A subPath mount is one file (or folder) of the volume placed at mountPath.
            inside = str(mount["subPath"]) if path == where else (
                posixpath.join(str(mount["subPath"]), path[len(where) + 1:]) if path.startswith(where + "/") else None)
        else:
            inside = path[len(where) + 1:] if path.startswith(where.rstrip("/") + "/") else None
        if inside and (best is None or len(where) > len(str(best[0].get("mountPath") or ""))):
            best = (mount, inside)
    return best


def _secret_file(volume: Mapping[str, Any], inside: str) -> SecretKey | None:
    """The Secret key a `secret` or `projected` volume shows at `inside`, when the volume says so."""
    sources = []
    if isinstance(volume.get("secret"), Mapping):
        sources.append((volume["secret"].get("secretName"), volume["secret"].get("items")))
    for source in ((volume.get("projected") or {}).get("sources") or []):
        if isinstance(source, Mapping) and isinstance(source.get("secret"), Mapping):
            sources.append((source["secret"].get("name"), source["secret"].get("items")))
    for name, items in sources:
        if not name:
            continue
        if items:
            key = next((i.get("key") for i in items if isinstance(i, Mapping) and i.get("path") == inside), None)
            if key:
                return SecretKey(str(name), str(key))
        elif "/" not in inside:
            # Without items every key of the Secret is a file named after it.
            return SecretKey(str(name), inside)
    return None


def _from_file(spec: Mapping[str, Any], container: Mapping[str, Any], entry: Mapping[str, Any]) -> PodToken:
    cname = str(container.get("name") or "?")
    if "value" not in entry:
        return PodToken(cname, unverifiable=f"{ENV_FILE} of container {cname} is set from valueFrom, not a path")
    path = posixpath.normpath(str(entry.get("value") or ""))
    found = _mount_for(container, path)
    if found is None:
        return PodToken(cname, problem=f"container {cname} sets {ENV_FILE}={path} but mounts no volume at "
                                       f"{posixpath.dirname(path)}: the server cannot read it and exits at start-up")
    mount, inside = found
    volume = next((v for v in spec.get("volumes") or [] if isinstance(v, Mapping) and v.get("name") == mount.get("name")),
                  None)
    if volume is None:
        return PodToken(cname, problem=f"container {cname} mounts volume {mount.get('name')} at {mount.get('mountPath')}, "
                                       f"which the pod template does not define")
    if not any(k in volume for k in ("secret", "projected")):
        kind = next((k for k in volume if k != "name"), "?")
        return PodToken(cname, unverifiable=f"{ENV_FILE}={path} is on volume {volume.get('name')} ({kind}), "
                                            f"not a Secret Forescale can read")
    key = _secret_file(volume, inside)
    if key is None:
        return PodToken(cname, problem=f"container {cname} sets {ENV_FILE}={path} but volume {volume.get('name')} "
                                       f"puts no Secret key at {inside}: the server cannot read it and exits at start-up")
    return PodToken(cname, secret=key)


def _from_env(container: Mapping[str, Any], entry: Mapping[str, Any]) -> PodToken:
    cname = str(container.get("name") or "?")
    if "value" in entry:
        return PodToken(cname, literal=str(entry.get("value") or ""))
    ref = ((entry.get("valueFrom") or {}).get("secretKeyRef")) or {}
    if ref.get("name") and ref.get("key"):
        return PodToken(cname, secret=SecretKey(str(ref["name"]), str(ref["key"])))
    return PodToken(cname, unverifiable=f"{ENV_TOKEN} of container {cname} comes from something other than a Secret")


def pod_token(template: Mapping[str, Any]) -> PodToken:
    """Where the pods of `template` (a Deployment's spec.template) read the admin token from."""
    spec = template.get("spec") or {}
    containers = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    for container in containers:
        file_entry, token_entry = _env(container, ENV_FILE), _env(container, ENV_TOKEN)
        if file_entry is not None:  # the server's rule: the file wins
            return _from_file(spec, container, file_entry)
        if token_entry is not None:
            return _from_env(container, token_entry)
    cname = str((containers[0] if containers else {}).get("name") or "?")
    return PodToken(cname, problem=f"container {cname} sets neither {ENV_FILE} nor {ENV_TOKEN}: its admin API is off")
