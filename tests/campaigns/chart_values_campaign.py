"""Adversarial chart values (issue 19, defect 12): every string value, one at a time, set to text with
newlines and YAML syntax.

The property: `helm template` either refuses the value (values.schema.json names
the key) or renders objects equal to the ones a benign value gives, apart from
that value itself. An unquoted `priorityClassName` with newlines used to add
`hostNetwork: true` and `hostPID: true` to the operator's pod spec.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any, Iterator

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "chart"))

from chart_tools import CHART, _parse, helm_template  # noqa: E402

#: values that switch on every optional template, so every string reaches a rendered object
BASE: dict[str, Any] = {
    "operator": {"namespaces": ["ml"], "adminTokenSecret": {"name": "admin-token"}, "extraArgs": ["--verbose"]},
    "metrics": {"serviceMonitor": {"enabled": True, "scrapeTimeout": "10s", "labels": {"release": "kps"}},
                "prometheusRule": {"enabled": True, "labels": {"release": "kps"}, "alertLabels": {"team": "ml"}},
                "dashboard": {"namespace": "grafana"}, "service": {"annotations": {"a": "b"}}},
    "priorityClassName": "high", "podLabels": {"tier": "ops"}, "podAnnotations": {"note": "x"},
    "nodeSelector": {"pool": "ops"}, "serviceAccount": {"annotations": {"iam": "role"}},
}

HOSTILE = [
    "x\nhostNetwork: true\nhostPID: true",
    "a: b",
    'x"\n  injected: true\n#',
    "- item\n- {a: b}",
    "{{ .Release.Name }}",
    "'single' & *alias",
    "x\r\nhostIPC: true",
    "  leading: [1, 2]",
    "key: |\n  block\n",
    "---\nkind: Secret",
]


def merged() -> dict[str, Any]:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    _merge(values, copy.deepcopy(BASE))
    return values


def _merge(into: dict, extra: dict) -> None:
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v


def string_leaves(node: Any, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """(path, value) of every string in the values: map values, list items and plain settings."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from string_leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from string_leaves(v, path + (i,))
    elif isinstance(node, str):
        yield path, node


def with_value(values: dict, path: tuple, value: str) -> dict:
    out = copy.deepcopy(values)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def render(values: dict, tmp: Path) -> tuple[int, str, list[dict]]:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / f"values-{abs(hash(yaml.safe_dump(values))) % 10**12}.yaml"
    path.write_text(yaml.safe_dump(values))
    result = helm_template([path])
    docs = _parse(result.stdout) if result.returncode == 0 else []
    return result.returncode, result.stderr, copy.deepcopy(docs)


def _replace(node: Any, old: str, new: str) -> Any:
    if isinstance(node, dict):
        return {_replace(k, old, new): _replace(v, old, new) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace(v, old, new) for v in node]
    if isinstance(node, str):
        return node.replace(old, new)
    return node


def check(values: dict, path: tuple, benign: str, hostile: str, tmp: Path) -> str:
    """'refused' or 'rendered'; raises AssertionError when the hostile value changed anything else."""
    dotted = ".".join(str(p) for p in path)
    rc, err, docs = render(with_value(values, path, hostile), tmp)
    if rc != 0:
        assert "values don't meet the specifications of the schema" in err or "Error" in err, err
        key = str(path[-1]) if not isinstance(path[-1], int) else str(path[-2])
        assert key in err, f"{dotted}: the refusal does not name the key:\n{err}"
        return "refused"
    for doc in docs:
        spec = ((doc.get("spec") or {}).get("template") or {}).get("spec") or {}
        assert not {"hostNetwork", "hostPID", "hostIPC"} & set(spec), f"{dotted}: injected {set(spec)}"
    brc, berr, baseline = render(with_value(values, path, benign), tmp)
    assert brc == 0, f"{dotted}: the benign value {benign!r} does not render:\n{berr}"
    assert _replace(docs, hostile, benign) == baseline, f"{dotted}={hostile!r} changed the rendered objects beyond itself"
    return "rendered"


def benign_for(value: str) -> str:
    return value if value else "safe1"
