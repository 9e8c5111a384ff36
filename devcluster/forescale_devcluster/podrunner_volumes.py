"""Secret volumes for the pod runner's local processes, as the kubelet would mount them.

A pod's process runs on this machine, not in a container, so a volume cannot
appear at its `mountPath`. Instead each `secret` volume, and each `secret`
source of a `projected` volume, that the first container mounts is written to
a folder of the pod's own, and every environment value naming a file under a
`mountPath` is rewritten to the same file in that folder. A template that
points the model server at a token file with no volume behind it therefore
fails here as it would in a cluster: the file does not exist.

A Secret that does not exist (and is not `optional`) keeps the pod from
starting, as the kubelet's FailedMount does; `VolumeNotReady` says which.
Other volume kinds (emptyDir, configMap, persistentVolumeClaim...) are
ignored, as the pod runner ignores images and node selectors.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any, Awaitable, Callable, Mapping

#: reads one Secret by name in the pod's namespace; None when it does not exist
SecretReader = Callable[[str], Awaitable[Mapping[str, Any] | None]]


class VolumeNotReady(RuntimeError):
    """A volume cannot be set up yet (its Secret or key is missing); the message is the kubelet's kind of reason."""


def secret_files(secret: Mapping[str, Any]) -> dict[str, bytes]:
    """A Secret's keys and their bytes (`data` base64-decoded, `stringData` as written, which wins)."""
    files = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
    files.update({k: str(v).encode() for k, v in (secret.get("stringData") or {}).items()})
    return files


async def _project(read: SecretReader, source: Mapping[str, Any], volume: str) -> dict[str, bytes]:
    """The files one secret source contributes: every key, or its `items` under their paths."""
    name = source.get("secretName") or source.get("name") or ""
    secret = await read(name) if name else None
    if secret is None:
        if source.get("optional"):
            return {}
        raise VolumeNotReady(f'MountVolume.SetUp failed for volume "{volume}": secret "{name}" not found')
    files = secret_files(secret)
    items = source.get("items")
    if not items:
        return files
    out = {}
    for item in items:
        key, path = item.get("key", ""), item.get("path") or item.get("key", "")
        if key not in files:
            if source.get("optional"):
                continue
            raise VolumeNotReady(f'MountVolume.SetUp failed for volume "{volume}": secret "{name}" has no key "{key}"')
        out[path] = files[key]
    return out


async def mount_secrets(pod_spec: Mapping[str, Any], read: SecretReader, root: Path) -> dict[str, Path]:
    """Write the first container's secret volumes under `root`; {mountPath: local folder} for the env rewrite."""
    volumes = {v.get("name"): v for v in pod_spec.get("volumes") or [] if isinstance(v, Mapping)}
    container = (pod_spec.get("containers") or [{}])[0]
    mounted: dict[str, Path] = {}
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount.get("name"))
        if volume is None or not mount.get("mountPath"):
            continue
        if "secret" in volume:
            sources = [volume["secret"]]
        elif "projected" in volume:
            sources = [s["secret"] for s in (volume["projected"].get("sources") or []) if "secret" in s]
            if not sources:
                continue
        else:
            continue
        files: dict[str, bytes] = {}
        for source in sources:
            files.update(await _project(read, source, mount["name"]))
        folder = root / mount["name"]
        folder.mkdir(parents=True, exist_ok=True)
        for path, content in files.items():
            target = (folder / path).resolve()
            if folder.resolve() not in target.parents:
                raise VolumeNotReady(f'volume "{mount["name"]}": item path {path!r} leaves the volume')
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            os.chmod(target, 0o600)
        mounted[mount["mountPath"].rstrip("/")] = folder
    return mounted


def rewrite_paths(env: dict[str, str], mounted: Mapping[str, Path]) -> dict[str, str]:
    """`env` with every value under a mount path pointing at the mounted folder instead."""
    out = dict(env)
    for name, value in env.items():
        for mount_path, folder in mounted.items():
            if value == mount_path or value.startswith(mount_path + "/"):
                out[name] = str(folder) + value[len(mount_path):]
                break
    return out
