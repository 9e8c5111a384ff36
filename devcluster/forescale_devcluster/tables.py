"""Table responses (`Accept: application/json;as=Table`) for `kubectl get`.

A real API server renders a CRD's `additionalPrinterColumns` server-side;
kubectl only prints the cells. Columns use simple JSONPath (`.status.phase`,
`.spec.slo.targetLatencyMs`); `date` columns are shown as an age, like
Kubernetes' HumanDuration.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Iterable, Mapping

from .resources import ServedResource

_DEFAULT_COLUMNS = ({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},)


def wants_table(accept: str | None) -> bool:
    """Whether the client asked for a meta.k8s.io Table."""
    return bool(accept) and "as=Table" in accept


def json_path(obj: Mapping[str, Any], path: str) -> Any:
    """Evaluate a simple JSONPath such as `.status.pools.a.readyReplicas` (no filters, no wildcards)."""
    value: Any = obj
    # `\.` escapes a dot inside a key, as in `.metadata.labels.forescale\.io/pool`.
    parts = path.strip().lstrip("{").rstrip("}").lstrip(".").replace("\\.", "\x00").split(".")
    for part in (p.replace("\x00", ".") for p in parts):
        if not part:
            continue
        index = None
        if part.endswith("]") and "[" in part:
            part, _, raw_index = part[:-1].partition("[")
            index = int(raw_index)
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
        if index is not None:
            if not isinstance(value, list) or not -len(value) <= index < len(value):
                return None
            value = value[index]
    return value


def human_duration(seconds: float) -> str:
    """Kubernetes' short age format: 45s, 5m12s, 3h4m, 2d5h, 400d."""
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 48:
        return f"{hours}h{minutes % 60}m" if hours < 8 and minutes % 60 else f"{hours}h"
    days = hours // 24
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    return f"{days}d"


def _age(value: Any, now: dt.datetime) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        then = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    return human_duration((now - then).total_seconds())


def render_table(resource: ServedResource, objects: Iterable[Mapping[str, Any]], resource_version: str) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table of the objects with the kind's printer columns (Name first)."""
    columns = list(resource.printer_columns) or list(_DEFAULT_COLUMNS)
    if not any(c.get("name") == "Age" for c in columns):
        columns.append(_DEFAULT_COLUMNS[0])
    now = dt.datetime.now(dt.timezone.utc)
    definitions = [{"name": "Name", "type": "string", "format": "name", "description": "Name of the object", "priority": 0}]
    definitions += [{"name": c["name"], "type": c.get("type", "string"), "format": c.get("format", ""),
                     "description": c.get("description", ""), "priority": int(c.get("priority", 0))} for c in columns]
    rows = []
    for obj in objects:
        cells: list[Any] = [obj.get("metadata", {}).get("name")]
        for column in columns:
            value = json_path(obj, column.get("jsonPath", ""))
            if column.get("type") == "date":
                value = _age(value, now)
            cells.append(value)
        meta = obj.get("metadata", {})
        rows.append({"cells": cells, "object": {
            "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta},
        }})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version},
            "columnDefinitions": definitions, "rows": rows}
