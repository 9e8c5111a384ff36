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
            ["kubectl -n forescale rollout status deployment/forescale", "kubectl apply -f crds/examples/minimal.yaml",
             "kubectl get infd -A", "every namespace", "set metrics.serviceMonitor.enabled=true",
             "No admin-token Secret is set", "ConfigMap forescale/forescale-dashboard"],
            ["install the CRDs yourself"],
        ),
        (
            {"operator.namespaces": "{ml,ml-staging}", "crds.install": "false", "operator.adminTokenSecret.name": "adm"},
            ["It watches InferenceDeployments in: ml, ml-staging.", "install the CRDs yourself first (kubectl apply -f crds/)"],
            ["No admin-token Secret is set", "every namespace"],
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
