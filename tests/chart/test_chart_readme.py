"""The chart's README is generated from values.yaml (kedacore/charts style) and
documents every value a user can set."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "devtools"))

from gen_chart_readme import documented_keys, render  # noqa: E402

VALUES = (ROOT / "charts" / "forescale" / "values.yaml").read_text()


def _leaves(node, prefix=""):
    for key, value in node.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield path, value
            yield from _leaves(value, path + ".")
        else:
            yield path, value


def test_readme_is_what_values_yaml_generates():
    result = subprocess.run([sys.executable, str(ROOT / "devtools" / "gen_chart_readme.py"), "--check"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_every_value_is_documented_or_inside_a_documented_one():
    documented = {key for key, _ in documented_keys(VALUES)}
    for path, _ in _leaves(yaml.safe_load(VALUES)):
        parts = path.split(".")
        covered = any(".".join(parts[:i]) in documented for i in range(1, len(parts) + 1))
        is_parent = any(k.startswith(path + ".") for k in documented)
        assert covered or is_parent, f"values.yaml: {path} has no `# --` description"


def test_readme_rows_carry_the_defaults():
    readme = render(VALUES)
    assert "| operator.replicas | int | `1` |" in readme
    assert "| crds.keep | bool | `true` |" in readme
    assert "helm install forescale <chart>" in readme and "charts/forescale" not in readme
