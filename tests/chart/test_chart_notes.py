"""NOTES.txt tells the user what to run next, and `helm package` ships what the chart needs."""

from __future__ import annotations

import shutil
import tarfile

import pytest
import yaml

from chart_tools import CHART, helm_path, helm_template, run

#: helm template does not render NOTES.txt; a copy of the chart renders it through tpl in a ConfigMap.
PROBE = """apiVersion: v1
kind: ConfigMap
metadata: {name: notes-probe}
data:
  notes: {{ tpl (.Files.Get "notes-probe.txt") . | toJson }}
"""


@pytest.fixture(scope="module")
def probe_chart(tmp_path_factory):
    chart = tmp_path_factory.mktemp("notes") / "forescale"
    shutil.copytree(CHART, chart)
    shutil.copy(chart / "templates" / "NOTES.txt", chart / "notes-probe.txt")
    (chart / "templates" / "notes-probe.yaml").write_text(PROBE)
    return chart


def _notes(chart, values: dict[str, str]) -> str:
    result = helm_template(set_values=values, chart=chart, show_only="templates/notes-probe.yaml")
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)["data"]["notes"]


@pytest.mark.parametrize(
    ("values", "present", "absent"),
    [
        (
            {},
            ["kubectl -n forescale rollout status deployment/forescale", "kubectl apply -f - <<'EOF'",
             "kubectl get infd -A", "every namespace", "set metrics.serviceMonitor.enabled=true",
             "Secret forescale/forescale-admin-token holds a random token", "ConfigMap forescale/forescale-dashboard"],
            ["install the CRDs yourself", "Admin calls are off"],
        ),
        (
            {"operator.namespaces": "{ml,ml-staging}", "crds.install": "false", "operator.adminTokenSecret.name": "adm"},
            ["It watches InferenceDeployments in: ml, ml-staging.", "install the CRDs yourself first",
             "--show-only templates/crds/forescale.io_inferencedeployments.yaml",
             "Secret adm (key token) must exist in each namespace", "create secret generic adm --from-literal=token="],
            ["Admin calls are off", "holds a random token", "every namespace"],
        ),
        (
            {"operator.adminTokenSecret.create": "false"},
            ["Admin calls are off", "--set operator.adminTokenSecret.create=true"],
            ["holds a random token", "must exist in each namespace"],
        ),
        (
            {"metrics.serviceMonitor.enabled": "true", "metrics.prometheusRule.enabled": "true", "operator.replicas": "3"},
            ["Alerts: ForescaleEmergencyTooLong", '3 replicas share the peering object "forescale"'],
            ["Prometheus does not scrape the operator yet", "Alerts are off"],
        ),
    ],
)
def test_notes_are_actionable(probe_chart, values, present, absent):
    notes = _notes(probe_chart, values)
    for text in present:
        assert text in notes
    for text in absent:
        assert text not in notes


@pytest.mark.parametrize("values", [{}, {"crds.install": "false"}])
def test_notes_work_from_an_installed_chart(probe_chart, values):
    """No path into this repository (an installed chart has none), and the manifest the
    notes apply passes the CRD's schema and the operator's parser."""
    from pathlib import Path

    from forescale_devcluster.crd_validation import schema_errors, version_schema
    from forescale_operator.spec import check_name, parse_spec

    notes = _notes(probe_chart, values)
    assert "crds/" not in notes.replace("templates/crds/", "") and "examples/" not in notes
    heredoc = notes.split("<<'EOF'\n", 1)[1].split("\n     EOF", 1)[0]
    body = yaml.safe_load("\n".join(line[5:] for line in heredoc.splitlines()))
    crd = yaml.safe_load((Path(CHART).parents[1] / "crds" / "forescale.io_inferencedeployments.yaml").read_text())
    assert schema_errors(body, version_schema(crd, "v1alpha1")) == []
    check_name(body["metadata"]["name"])
    assert parse_spec(body["spec"]).a.min_replicas == 2


def test_helm_package_ships_templates_files_and_schema(tmp_path):
    result = run([helm_path(), "package", str(CHART), "--destination", str(tmp_path)])
    assert result.returncode == 0, result.stderr
    (archive,) = tmp_path.glob("forescale-*.tgz")
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    for needed in ("values.schema.json", "templates/NOTES.txt", "files/dashboards/forescale.json",
                   "templates/crds/forescale.io_inferencedeployments.yaml"):
        assert f"forescale/{needed}" in names
    assert not any(name.startswith("forescale/ci/") for name in names)  # .helmignore keeps lint cases out
