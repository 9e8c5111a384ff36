"""Prometheus file-based service discovery targets for the emulated pods.

In a cluster Prometheus finds pods through its Kubernetes discovery; here the
pod runner writes the same facts into a `file_sd_configs` JSON file, which
Prometheus re-reads when it changes. The write is atomic (temp file + rename)
so Prometheus never reads a half-written file.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass


@dataclass(frozen=True)
class ScrapeTarget:
    """One pod as Prometheus should see it."""

    address: str      # host:port
    namespace: str
    pod: str
    deployment: str   # the value of the pod's forescale.io/deployment label
    pool: str         # the value of the pod's forescale.io/pool label


def file_sd_groups(targets: list[ScrapeTarget]) -> list[dict]:
    """The file_sd JSON document: one target group per pod, sorted for stable output."""
    return [
        {"targets": [t.address],
         "labels": {"namespace": t.namespace, "pod": t.pod, "deployment": t.deployment, "pool": t.pool}}
        for t in sorted(targets, key=lambda t: (t.namespace, t.pod))
    ]


def write_file_sd(path: str, targets: list[ScrapeTarget]) -> None:
    """Atomically replace `path` with the file_sd document for `targets`."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".file_sd-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(file_sd_groups(targets), fh, indent=1)
        os.replace(tmp, path)
    except BaseException:
        # Leave no stray temp file behind, whatever interrupted the write.
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
