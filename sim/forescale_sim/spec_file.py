"""`--spec FILE`: the InferenceDeployment the forescale policy replays with.

The file is YAML or JSON: a whole InferenceDeployment (its `spec` is taken)
or a bare spec. Its top-level fields replace the replay's defaults
(`policies.forescale.replay_spec`), except `slo`, which always comes from
`--slo-ms` so that every policy is measured against the same SLO.
Pool B's `costWeight` reaches the engine, but the replay's GPU-hours weigh B
at 1.0: B is simulated on A's GPU (at int8), so a lower weight would claim a
saving the simulation does not model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import SimError


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
    return doc
