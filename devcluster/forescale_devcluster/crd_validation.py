"""What a real API server does with a custom resource before storing it: defaults, schema, CEL rules.

- `apply_defaults` fills `default:` values of a structural schema (an absent
  object gets its defaults only when the parent schema defaults it to `{}`).
- `schema_errors` checks types, enums, minimum/maximum, patterns and required
  fields (OpenAPI v3 as JSON Schema draft 4, via `jsonschema`).
- `cel_errors` evaluates the `x-kubernetes-validations` rules with
  `cel-python` (KMock does not evaluate CEL). On an update it ratchets, as
  kube-apiserver does since CRD validation ratcheting (KEP-4008, stable in
  1.33): a rule whose node is unchanged from the stored object is not
  evaluated again (a rule that reads `oldSelf` always is). Besides being
  what a real server does, it is what lets this stand-in keep up: each
  cel-python evaluation converts its node to CEL values, and the 18 rules on
  `spec` cost about 27 ms of CPU per status PATCH, so 1,000 resources writing
  status every 15 s were more than one core (bench/operator_scale.py, run 12).
  A schema is mutated nowhere once served, so its validator is built once.

The emulator answers 422 with these messages, as kube-apiserver would. When
`jsonschema` or `cel-python` is not installed, that check is skipped (and
`available()` says which).
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Iterator, Mapping


def available() -> dict[str, bool]:
    """Which optional checkers are installed."""
    result = {}
    for module in ("jsonschema", "celpy"):
        try:
            __import__(module)
            result[module] = True
        except ImportError:
            result[module] = False
    return result


def version_schema(crd: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The openAPIV3Schema of one version of a CRD."""
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            return v["schema"]["openAPIV3Schema"]
    raise KeyError(f"CRD {crd['metadata']['name']} has no version {version!r}")


def apply_defaults(value: Any, schema: Mapping[str, Any]) -> Any:
    """A copy of value with the schema's defaults filled in, recursively."""
    value = copy.deepcopy(value)
    _default(value, schema)
    return value


def _default(value: Any, schema: Mapping[str, Any]) -> None:
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                _default(value[key], sub)
    elif isinstance(value, list) and "items" in schema:
        for item in value:
            _default(item, schema["items"])


def _json_schema(schema: Any) -> Any:
    """OpenAPI v3 as draft-4 JSON Schema: drop the x-kubernetes-* keys and `format`s draft 4 does not know."""
    if isinstance(schema, Mapping):
        out = {k: _json_schema(v) for k, v in schema.items() if not k.startswith("x-kubernetes-")}
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            out.pop("properties", None)
        if out.get("format") in ("int32", "int64", "date-time"):
            out.pop("format")
        return out
    if isinstance(schema, list):
        return [_json_schema(v) for v in schema]
    return schema


#: a validator per schema object served (id -> (the schema, its validator)); the schema is held so that its id is
#: not reused. Building one converted the whole schema on every write: 2 ms of a status PATCH's 4.
_VALIDATORS: dict[int, tuple[Any, Any]] = {}


def _validator(schema: Mapping[str, Any]) -> Any:
    """The draft-4 validator of a served schema, built once (None without `jsonschema`)."""
    try:
        import jsonschema
    except ImportError:
        return None
    held = _VALIDATORS.get(id(schema))
    if held is None or held[0] is not schema:
        held = _VALIDATORS[id(schema)] = (schema, jsonschema.Draft4Validator(_json_schema(schema)))
    return held[1]


def schema_errors(obj: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """`spec.slo.quantile: 1.5 is greater than the maximum of 0.9999`-style messages; empty when valid."""
    validator = _validator(schema)
    if validator is None:
        return []
    errors = []
    for error in sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in error.absolute_path) or "(root)"
        errors.append(f"{where}: {error.message}")
    return errors


#: no stored value at a node (a create, or a node the update adds)
_ABSENT = object()


def _rules(value: Any, schema: Mapping[str, Any], path: str,
           old: Any = _ABSENT) -> Iterator[tuple[str, Mapping[str, Any], Any, Any]]:
    """Each rule with its node's path, value and stored value (`_ABSENT` where there is none)."""
    for rule in schema.get("x-kubernetes-validations") or []:
        yield path, rule, value, old
    if isinstance(value, Mapping):
        for key, sub in (schema.get("properties") or {}).items():
            if key in value:
                before = old.get(key, _ABSENT) if isinstance(old, Mapping) else _ABSENT
                yield from _rules(value[key], sub, f"{path}.{key}" if path else key, before)
    elif isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            before = old[i] if isinstance(old, list) and i < len(old) else _ABSENT
            yield from _rules(item, schema["items"], f"{path}[{i}]", before)


@functools.lru_cache(maxsize=512)
def _program(rule: str) -> Any:
    """A compiled CEL rule. Compiling (a lark parse) cost ~40% of the server's CPU when
    1,000 resources wrote status every 15 s (bench/operator_scale.py); rules rarely change."""
    import celpy

    env = celpy.Environment()
    return env.program(env.compile(rule))


def cel_errors(obj: Mapping[str, Any], schema: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[str]:
    """Evaluate every CEL rule at its node; `spec.pools.a: pools.a.minReplicas must be <= maxReplicas`.
    Given the stored object (`old`, an update), a rule whose node is unchanged is skipped (ratcheting)."""
    try:
        import celpy
    except ImportError:
        return []
    errors = []
    for path, rule, value, before in _rules(obj, schema, "", _ABSENT if old is None else old):
        if before is not _ABSENT and before == value and "oldSelf" not in rule["rule"]:
            continue
        program = _program(rule["rule"])
        try:
            ok = bool(program.evaluate({"self": celpy.json_to_cel(value)}))
        except Exception as exc:  # noqa: BLE001 - a rule that cannot be evaluated fails, as on a real server
            ok, rule = False, {**rule, "message": f"{rule.get('message', rule['rule'])} ({exc})"}
        if not ok:
            errors.append(f"{path}{rule.get('fieldPath', '')}: {rule.get('message') or 'failed rule: ' + rule['rule']}")
    return errors


def validate(obj: Mapping[str, Any], schema: Mapping[str, Any],
             old: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The defaulted object and every error (schema first, then CEL), as kube-apiserver orders them;
    `old`, the stored object of an update, ratchets the CEL rules (`cel_errors`)."""
    defaulted = apply_defaults(dict(obj), schema)
    errors = schema_errors(defaulted, schema)
    if not errors:
        errors = cel_errors(defaulted, schema, old)
    return defaulted, errors
