"""helm lint and helm template for every ci/*-values.yaml, and what the rendered manifests must hold."""

from __future__ import annotations

import pytest
import kubernetes_validate

from chart_tools import CHART, CI_VALUES, NAMESPACE, env_of, helm_path, of_kind, one, render, run

#: Kinds kubernetes-validate has no schema for: the kopf peering objects and
#: prometheus-operator's kinds are custom resources (CRDs themselves validate).
NO_SCHEMA_KINDS = {"ClusterKopfPeering", "KopfPeering", "ServiceMonitor", "PrometheusRule"}
#: The oldest Kubernetes the chart supports (Chart.yaml kubeVersion; the CRD's CEL rules use fieldPath, new in 1.28) and the newest the validator knows.
KUBE_VERSIONS = ["1.28", kubernetes_validate.latest_version()]
CI_IDS = [p.name for p in CI_VALUES]


def test_there_are_ci_values_files():
    assert len(CI_VALUES) >= 4, "ci/*-values.yaml are the lint cases"


@pytest.mark.parametrize("values_file", CI_VALUES, ids=CI_IDS)
def test_helm_lint_strict(values_file):
    result = run([helm_path(), "lint", "--strict", str(CHART), "--values", str(values_file)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


@pytest.mark.parametrize("values_file", CI_VALUES, ids=CI_IDS)
def test_rendered_manifests_pass_kubernetes_validate_strict(values_file):
    manifests = render([values_file])
    validated = []
    for doc in manifests:
        if doc["kind"] in NO_SCHEMA_KINDS:
            continue
        for version in KUBE_VERSIONS:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                pytest.fail(f"{doc['kind']}/{doc['metadata']['name']} is invalid for Kubernetes {version}: {exc}")
        validated.append(doc["kind"])
    assert "Deployment" in validated


@pytest.mark.parametrize("values_file", CI_VALUES, ids=CI_IDS)
def test_pod_security(values_file):
    """Non-root, read-only root filesystem, no privilege escalation, no capabilities, seccomp RuntimeDefault."""
    pod = one(render([values_file]), "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in pod["containers"]:
        sc = container["securityContext"]
        assert sc["runAsNonRoot"] is True
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"]["drop"] == ["ALL"]
        assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
        assert {m["mountPath"] for m in container["volumeMounts"]} == {"/tmp"}
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"


@pytest.mark.parametrize("values_file", CI_VALUES, ids=CI_IDS)
def test_every_object_has_the_standard_labels(values_file):
    for doc in render([values_file]):
        labels = doc["metadata"].get("labels") or {}
        for key in ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"):
            assert key in labels, f"{doc['kind']}/{doc['metadata']['name']} lacks label {key}"


@pytest.mark.parametrize(
    ("values", "args", "env"),
    [
        ({}, ["-A"], {"FORESCALE_NAMESPACES": "", "FORESCALE_PEERING": "forescale",
                             "FORESCALE_ADMIN_TOKEN_SECRET": "forescale-admin-token/token"}),
        (
            {"operator.namespaces": "{ml,ml-staging}", "operator.adminTokenSecret.name": "admin", "operator.logLevel": "DEBUG"},
            ["-n", "ml", "-n", "ml-staging"],
            {"FORESCALE_NAMESPACES": "ml,ml-staging", "FORESCALE_ADMIN_TOKEN_SECRET": "admin/token", "FORESCALE_LOG_LEVEL": "DEBUG"},
        ),
        ({"operator.peering.enabled": "false"}, ["-A"], {"FORESCALE_PEERING": ""}),
        (
            {"operator.prometheusUrl": "http://prom:9090", "operator.metricsPort": "9100", "operator.healthPort": "9101"},
            ["-A"],
            {"FORESCALE_PROMETHEUS_URL": "http://prom:9090", "FORESCALE_METRICS_PORT": "9100", "FORESCALE_HEALTH_PORT": "9101"},
        ),
    ],
)
def test_operator_settings_reach_the_container(values, args, env):
    deployment = one(render(set_values=values), "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == args
    got = env_of(deployment)
    for key, value in env.items():
        assert got[key] == value, key
    # kopf needs a distinct peering priority per replica: the pod name.
    assert got["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}


@pytest.mark.parametrize(
    ("values", "image"),
    [
        ({}, "ghcr.io/forescale/forescale-operator:0.1.0"),
        ({"image.tag": "dev"}, "ghcr.io/forescale/forescale-operator:dev"),
        ({"image.repository": "r.example/op", "image.tag": "v1", "image.digest": "sha256:" + "a" * 64}, "r.example/op@sha256:" + "a" * 64),
    ],
)
def test_image_reference(values, image):
    container = one(render(set_values=values), "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == image


@pytest.mark.parametrize(
    ("values", "kinds_present", "kinds_absent"),
    [
        ({}, {"ClusterKopfPeering", "Service", "ConfigMap", "CustomResourceDefinition"},
         {"ServiceMonitor", "PrometheusRule", "KopfPeering", "Role", "PodDisruptionBudget"}),
        ({"operator.namespaces": "{ml}"}, {"KopfPeering", "Role", "RoleBinding"}, {"ClusterKopfPeering"}),
        ({"operator.peering.enabled": "false"}, set(), {"ClusterKopfPeering", "KopfPeering"}),
        ({"metrics.serviceMonitor.enabled": "true", "metrics.prometheusRule.enabled": "true"}, {"ServiceMonitor", "PrometheusRule"}, set()),
        ({"crds.install": "false", "metrics.dashboard.enabled": "false", "metrics.service.enabled": "false"}, set(), {"CustomResourceDefinition", "ConfigMap", "Service"}),
        ({"rbac.create": "false", "serviceAccount.create": "false"}, {"Deployment"}, {"ClusterRole", "Role", "ServiceAccount"}),
        ({"operator.replicas": "2"}, {"PodDisruptionBudget"}, set()),
        ({"operator.replicas": "2", "podDisruptionBudget.enabled": "false"}, set(), {"PodDisruptionBudget"}),
    ],
)
def test_optional_objects(values, kinds_present, kinds_absent):
    kinds = {doc["kind"] for doc in render(set_values=values)}
    assert kinds_present <= kinds
    assert not kinds & kinds_absent


def test_service_monitor_keeps_the_resource_namespace_label():
    """honorLabels: the operator's `namespace` label names the InferenceDeployment's namespace."""
    monitor = one(render(set_values={"metrics.serviceMonitor.enabled": "true"}), "ServiceMonitor")
    endpoint = monitor["spec"]["endpoints"][0]
    assert endpoint["honorLabels"] is True and endpoint["port"] == "metrics"
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [NAMESPACE]


def test_peering_object_is_a_post_install_hook():
    """Its CRD is in the same release, so the object must come after the CRDs are applied."""
    peering = one(render(), "ClusterKopfPeering")
    assert peering["metadata"]["name"] == "forescale"
    assert peering["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"


def test_values_are_documented_and_ordered():
    """Every leaf value has a `# --` comment; top-level keys go image -> crds -> operator -> RBAC -> metrics -> Kubernetes."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    undocumented = []
    documented_parents: list[int] = []  # indents of documented values whose children are their content
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or ":" not in stripped or stripped.startswith("-"):
            continue
        indent = len(line) - len(line.lstrip())
        while documented_parents and indent <= documented_parents[-1]:
            documented_parents.pop()
        if documented_parents:
            continue
        j = i - 1
        while j >= 0 and lines[j].strip().startswith("#") and not lines[j].strip().startswith("# --"):
            j -= 1
        has_doc = j >= 0 and lines[j].strip().startswith("# --")
        is_parent = stripped.endswith(":") and not has_doc
        if is_parent:
            continue
        if not has_doc:
            undocumented.append(stripped.split(":")[0])
        elif stripped.endswith(":"):
            documented_parents.append(indent)
    assert undocumented == []
    top = [line.split(":")[0] for line in lines if line and line[0].isalpha()]
    order = ["image", "crds", "operator", "rbac", "serviceAccount", "metrics", "podDisruptionBudget", "resources", "affinity"]
    assert [top.index(key) for key in order] == sorted(top.index(key) for key in order)


def test_the_operator_has_requests_and_limits_by_default():
    # from the scale benchmark (docs/operator-scale.md): torch and the LSTM make an unbounded operator a risk
    resources = one(render(), "Deployment")["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}


@pytest.mark.parametrize("fullname, service", [
    ("forescale", "forescale-metrics"),
    ("x" * 60, "x" * 55 + "-metrics"),  # cut to fit the 63 characters of a Service name
])
def test_the_metrics_service_name_fits_a_service_name(fullname, service):
    rendered = one(render(set_values={"fullnameOverride": fullname}), "Service")
    assert rendered["metadata"]["name"] == service and len(service) <= 63


@pytest.mark.parametrize("size", ["256Mi", "1G", "1.5Gi", "500M"])
def test_tmp_size_limit_takes_a_kubernetes_quantity(size):
    deployment = one(render(set_values={"tmpSizeLimit": size}), "Deployment")
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert any(v.get("emptyDir", {}).get("sizeLimit") == size for v in volumes.values())
