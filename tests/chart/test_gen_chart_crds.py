"""Unit tests of devtools/gen_chart_crds.py on small CRDs in a temporary folder."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
import yaml

from chart_tools import CHART, REPO, helm_template

spec = importlib.util.spec_from_file_location("gen_chart_crds", REPO / "devtools" / "gen_chart_crds.py")
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com", "labels": {"app.kubernetes.io/name": "x", "team": "ml"}},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"kind": "Widget", "plural": "widgets"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
            "type": "object", "description": "Set {{ .name }} in the template, literally.",
            "x-kubernetes-preserve-unknown-fields": True}}}],
    },
}


def _write(folder: Path, name: str, docs: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


@pytest.fixture()
def chart_copy(tmp_path: Path) -> Path:
    """A copy of the chart whose CRD templates come from a temporary crds/ folder."""
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart, ignore=shutil.ignore_patterns("crds"))
    return chart


@pytest.mark.parametrize(
    ("values", "crds_rendered", "keep"),
    [
        ({}, 1, True),
        ({"crds.keep": "false"}, 1, False),
        ({"crds.install": "false"}, 0, False),
    ],
)
def test_generated_template_follows_crds_values(tmp_path, chart_copy, values, crds_rendered, keep):
    """crds.install renders or drops the CRD; crds.keep adds the keep policy; literal {{ }} survive."""
    source = tmp_path / "crds"
    _write(source, "widgets.yaml", [CRD])
    gen.write(source, chart_copy / "templates" / "crds")
    result = helm_template(set_values=values, chart=chart_copy)
    assert result.returncode == 0, result.stderr
    crds = [d for d in yaml.safe_load_all(result.stdout) if d and d["kind"] == "CustomResourceDefinition"]
    assert len(crds) == crds_rendered
    for crd in crds:
        meta = crd["metadata"]
        assert (meta.get("annotations") or {}).get("helm.sh/resource-policy") == ("keep" if keep else None)
        assert meta["labels"]["team"] == "ml"
        assert meta["labels"]["app.kubernetes.io/name"] == "forescale"  # the chart's label wins
        assert crd["spec"] == CRD["spec"]  # description with {{ }} kept verbatim


def test_generation_is_idempotent_and_detects_drift(tmp_path):
    """A second run writes nothing; a hand edit, a missing and a stale file are each reported."""
    source, target = tmp_path / "crds", tmp_path / "out"
    _write(source, "widgets.yaml", [CRD])
    _write(source / "examples", "ignored.yaml", [{"kind": "Widget"}])
    assert [p.name for p in gen.write(source, target)] == ["widgets.yaml"]
    assert gen.write(source, target) == []
    assert gen.drift(source, target) == []

    (target / "widgets.yaml").write_text((target / "widgets.yaml").read_text() + "# edit\n")
    _write(source, "gadgets.yaml", [dict(CRD, metadata={"name": "gadgets.example.com"})])
    (target / "old.yaml").write_text(gen.GENERATED_MARK + " from crds/old.yaml\n")
    problems = gen.drift(source, target)
    assert [p.split()[0] for p in problems] == ["missing", "differs", "stale"]

    gen.write(source, target)
    assert gen.drift(source, target) == []
    assert not (target / "old.yaml").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("kind: ConfigMap\nmetadata: {name: x}\n", "expected kind CustomResourceDefinition"),
        ("kind: CustomResourceDefinition\nmetadata: {}\n", "has no metadata.name"),
        ("kind: [unclosed\n", "not valid YAML"),
        ("# only a comment\n", "holds no YAML document"),
    ],
)
def test_bad_source_files_get_a_clear_error(tmp_path, capsys, content, message):
    """A file in crds/ that is not a CRD is named in a one-line error, exit code 2."""
    source = tmp_path / "crds"
    source.mkdir()
    (source / "bad.yaml").write_text(content)
    assert gen.main(["--source", str(source), "--target", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "crds/bad.yaml" in err and message in err


def test_check_mode_names_the_make_target(tmp_path, capsys):
    """--check exits 1 and tells the user what to run."""
    source = tmp_path / "crds"
    _write(source, "widgets.yaml", [CRD])
    assert gen.main(["--source", str(source), "--target", str(tmp_path / "out"), "--check"]) == 1
    assert "run `make crds-chart`" in capsys.readouterr().err
