"""`--spec FILE` and `--set PATH=VALUE`: the InferenceDeployment the forescale policy replays with.

The file is YAML or JSON: a whole InferenceDeployment (its `spec` is taken)
or a bare spec. Its top-level fields replace the replay's defaults
(`policies.forescale.replay_spec`), except `slo`, which always comes from
`--slo-ms` so that every policy is measured against the same SLO.
Pool B's `costWeight` reaches the engine, but the replay's GPU-hours weigh B
at 1.0: B is simulated on A's GPU (at int8), so a lower weight would claim a
saving the simulation does not model.

`--set PATH=VALUE` (repeatable, as `helm --set`) changes one field of the
spec the replay ends up with, after `--spec`: `--set
traffic.overloadMaxPercent=0` keeps the route and its parentRefs, where a
`--spec` with a `traffic` section replaces the whole section. PATH is dotted
mapping keys; VALUE is read as a YAML scalar (`1.5`, `true`, `fp16`). The
SLO is `--slo-ms`'s, here as with `--spec`, and a PATH under `slo` is
refused rather than ignored.

A field the InferenceDeployment has no place for, in `--spec` or a `--set`
PATH, is refused with the fields it has there: the spec parser ignores what
it does not read, as the API server prunes it, so a typo
(`traffic.overloadMaxPrcent`) would otherwise replay the defaults and say
nothing. The fields are the CRD's (`crds/`, read from the checkout; an install from a wheel has
none, and then the spec parser's checks alone).
"""

from __future__ import annotations

import copy
import difflib
import functools
from pathlib import Path
from typing import Any, Mapping

from .errors import SimError


#: the CRD whose spec schema names every field a `--spec` or `--set` may carry
CRD_FILE = Path(__file__).resolve().parents[2] / "crds" / "forescale.io_inferencedeployments.yaml"


@functools.cache
def spec_schema(path: Path = CRD_FILE) -> Mapping[str, Any]:
    """The openAPIV3Schema of the CRD's stored version, under `spec`; empty where the CRD is not
    beside the package (an install from a wheel has no `crds/`): then no field is refused here, and
    the spec parser's own checks are all there is."""
    import yaml

    try:
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError:
        return {}
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    return version["schema"]["openAPIV3Schema"]["properties"]["spec"]


def unknown_field(keys: tuple[str, ...], schema: Mapping[str, Any] | None = None) -> str | None:
    """Why the spec has no field at dotted `keys` (None: it has, or the path enters a part the schema
    leaves open, such as a pod template, or there is no schema to ask)."""
    node = spec_schema() if schema is None else schema
    for i, key in enumerate(keys):
        props = node.get("properties")
        if not props or node.get("x-kubernetes-preserve-unknown-fields"):
            return None
        if key not in props:
            where = ".".join(keys[:i]) or "the spec"
            close = difflib.get_close_matches(key, list(props), n=1)
            hint = f"; did you mean {'.'.join((*keys[:i], close[0]))}?" if close else ""
            return f"{where} has no field {key!r} (it has {', '.join(props)}){hint}"
        node = props[key]
    return None


def _unknown_in(doc: Mapping[str, Any], keys: tuple[str, ...] = ()) -> str | None:
    """The first field of `doc` (a spec, or part of one at `keys`) the spec has no place for."""
    for key, value in doc.items():
        path = (*keys, str(key))
        why = unknown_field(path)
        if why is None and isinstance(value, Mapping):
            why = _unknown_in(value, path)
        if why:
            return why
    return None


def load_spec_overrides(path: str | Path) -> dict[str, Any]:
    """The spec fields to apply over the replay's defaults; SimError on a bad file."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise SimError(f"--spec {path}: no such file")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise SimError(f"--spec {path}: not YAML or JSON ({str(exc).splitlines()[0]})") from None
    if isinstance(doc, dict) and (doc.get("kind") == "InferenceDeployment" or isinstance(doc.get("spec"), dict)):
        doc = doc.get("spec")
    if not isinstance(doc, dict) or not doc:
        raise SimError(f"--spec {path}: expected an InferenceDeployment or its spec (a mapping)")
    doc = dict(doc)
    doc.pop("slo", None)
    unknown = _unknown_in(doc)
    if unknown:
        raise SimError(f"--spec {path}: {unknown}")
    return doc


#: one `--set`: the dotted path's keys and the value
SpecSet = tuple[tuple[str, ...], Any]


def parse_sets(values: list[str] | tuple[str, ...]) -> tuple[SpecSet, ...]:
    """`--set PATH=VALUE` flags, parsed; SimError naming the flag on a bad one."""
    import yaml

    out = []
    for text in values:
        path, eq, raw = text.partition("=")
        keys = tuple(path.strip().split("."))
        if not eq or not path.strip() or any(not k for k in keys):
            raise SimError(f"--set {text!r}: expected PATH=VALUE with a dotted PATH, "
                           "e.g. --set traffic.overloadMaxPercent=0")
        if keys[0] == "slo":
            raise SimError(f"--set {text!r}: the SLO comes from --slo-ms (every policy is measured against it)")
        if not raw.strip():
            raise SimError(f"--set {text!r}: no value after '='")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        if isinstance(value, (dict, list)):
            raise SimError(f"--set {text!r}: VALUE must be a scalar; set a whole section with --spec")
        unknown = unknown_field(keys)
        if unknown:
            raise SimError(f"--set {text!r}: {unknown}")
        out.append((keys, value))
    return tuple(out)


def apply_sets(spec: dict[str, Any], sets: tuple[SpecSet, ...]) -> dict[str, Any]:
    """`spec` with each `--set` applied in order (a copy); SimError where a PATH crosses a non-mapping."""
    spec = copy.deepcopy(spec)
    for keys, value in sets:
        node = spec
        for i, key in enumerate(keys[:-1]):
            child = node.setdefault(key, {})
            if not isinstance(child, dict):
                raise SimError(f"--set {'.'.join(keys)}: {'.'.join(keys[:i + 1])} is {child!r}, not a mapping")
            node = child
        node[keys[-1]] = value
    return spec
