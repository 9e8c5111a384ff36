"""Label and field selectors as the Kubernetes API reads them from a query string."""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

Predicate = Callable[[Mapping[str, Any]], bool]


class SelectorError(ValueError):
    """A selector the server cannot parse; answered with 400."""


_SET_RE = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def _split(selector: str) -> list[str]:
    """Split on commas that are not inside a `(...)` value set."""
    parts, depth, current = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def label_selector(selector: str | None) -> Predicate:
    """A predicate over an object's labels: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`."""
    if not selector:
        return lambda labels: True
    tests: list[Predicate] = []
    for term in _split(selector):
        if match := _SET_RE.match(term):
            key, op, values = match.group(1), match.group(2), {v.strip() for v in match.group(3).split(",") if v.strip()}
            if op == "in":
                tests.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
            else:
                tests.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
        elif "!=" in term:
            key, value = (s.strip() for s in term.split("!=", 1))
            tests.append(lambda labels, k=key, v=value: labels.get(k) != v)
        elif "=" in term:
            key, value = (s.strip() for s in term.replace("==", "=").split("=", 1))
            tests.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif term.startswith("!"):
            tests.append(lambda labels, k=term[1:].strip(): k not in labels)
        elif re.fullmatch(r"[A-Za-z0-9_./-]+", term):
            tests.append(lambda labels, k=term: k in labels)
        else:
            raise SelectorError(f"unable to parse label selector term {term!r}")
    return lambda labels: all(test(labels) for test in tests)


def _field(obj: Mapping[str, Any], path: str) -> Any:
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def field_selector(selector: str | None) -> Predicate:
    """A predicate over a whole object: `metadata.name=x`, `involvedObject.uid!=y`, ..."""
    if not selector:
        return lambda obj: True
    tests: list[Predicate] = []
    for term in _split(selector):
        negate = "!=" in term
        key, sep, value = term.replace("!=", "=").replace("==", "=").partition("=")
        if not sep:
            raise SelectorError(f"unable to parse field selector term {term!r}")
        key, value = key.strip(), value.strip()
        if negate:
            tests.append(lambda obj, k=key, v=value: str(_field(obj, k) or "") != v)
        else:
            tests.append(lambda obj, k=key, v=value: str(_field(obj, k) or "") == v)
    return lambda obj: all(test(obj) for test in tests)
