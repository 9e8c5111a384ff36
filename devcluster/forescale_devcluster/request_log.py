"""Every request the emulated API server answered, as RBAC sees it.

One record per request: (verb, apiGroup, resource, subresource, namespace),
plus the name and the status answered. The chart's RBAC test reads these to
check that the ClusterRole grants exactly what the operator uses. With a
path, the records are also appended to a JSON-lines file (for the CLI mode).
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class RequestRecord:
    verb: str  # get, list, watch, create, update, patch, delete
    api_group: str  # "" for the core group
    resource: str  # plural
    subresource: str  # "" for the object itself
    namespace: str  # "" for cluster-scoped or all-namespaces requests
    name: str = ""
    status: int = 0
    #: the client's User-Agent (tells operator replicas, kubectl and kopf apart)
    user_agent: str = ""

    @property
    def rbac_key(self) -> tuple[str, str, str, str, str]:
        return (self.verb, self.api_group, self.resource, self.subresource, self.namespace)


class RequestLog:
    """A thread-safe, append-only list of records (optionally mirrored to a file)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self._records: list[RequestRecord] = []
        self._lock = threading.Lock()
        self._path = Path(path) if path else None

    def append(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)
            if self._path is not None:
                with self._path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(asdict(record)) + "\n")

    def records(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._records)

    def __iter__(self):
        return iter(self.records())

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def rbac_keys(self) -> set[tuple[str, str, str, str, str]]:
        """The distinct (verb, apiGroup, resource, subresource, namespace) seen."""
        return {r.rbac_key for r in self.records()}

    @staticmethod
    def read(path: str | Path) -> list[RequestRecord]:
        """Records written by a server in another process."""
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        return [RequestRecord(**json.loads(line)) for line in lines if line.strip()]
