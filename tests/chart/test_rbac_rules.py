"""Unit tests of rbac_rules: RBAC matching and the HTTP-request-to-call mapping."""

from __future__ import annotations

import pytest

from rbac_rules import ApiCall, Grant, call_from_record, call_from_request, denied_calls, load_grants, rbac_allows, unused_permissions

DEPLOY_RULE = {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "patch"]}
STATUS_RULE = {"apiGroups": ["forescale.io"], "resources": ["inferencedeployments/status"], "verbs": ["patch"]}
SECRET_RULE = {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["admin"], "verbs": ["get"]}
CRD_RULE = {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["list"]}
STAR_RULE = {"apiGroups": ["*"], "resources": ["*"], "verbs": ["get"]}


@pytest.mark.parametrize(
    ("grants", "call", "allowed"),
    [
        # cluster-wide grant: any namespace and all-namespaces requests
        ([Grant(DEPLOY_RULE, None)], ApiCall("patch", "apps", "deployments", namespace="ml", name="chat-a"), True),
        ([Grant(DEPLOY_RULE, None)], ApiCall("list", "apps", "deployments"), True),
        ([Grant(DEPLOY_RULE, None)], ApiCall("delete", "apps", "deployments", namespace="ml", name="chat-a"), False),
        ([Grant(DEPLOY_RULE, None)], ApiCall("get", "", "deployments", namespace="ml", name="x"), False),  # wrong group
        # namespaced grant: only its namespace, never all namespaces
        ([Grant(DEPLOY_RULE, "ml")], ApiCall("get", "apps", "deployments", namespace="ml", name="a"), True),
        ([Grant(DEPLOY_RULE, "ml")], ApiCall("get", "apps", "deployments", namespace="other", name="a"), False),
        ([Grant(DEPLOY_RULE, "ml")], ApiCall("list", "apps", "deployments"), False),
        # subresources are separate resources
        ([Grant(STATUS_RULE, None)], ApiCall("patch", "forescale.io", "inferencedeployments", "status", "ml", "chat"), True),
        ([Grant(STATUS_RULE, None)], ApiCall("patch", "forescale.io", "inferencedeployments", namespace="ml", name="chat"), False),
        # resourceNames: only named requests for those names
        ([Grant(SECRET_RULE, "ml")], ApiCall("get", "", "secrets", namespace="ml", name="admin"), True),
        ([Grant(SECRET_RULE, "ml")], ApiCall("get", "", "secrets", namespace="ml", name="other"), False),
        ([Grant(SECRET_RULE, "ml")], ApiCall("list", "", "secrets", namespace="ml"), False),
        # cluster-scoped resources need a cluster-wide grant
        ([Grant(CRD_RULE, None)], ApiCall("list", "apiextensions.k8s.io", "customresourcedefinitions"), True),
        ([Grant(CRD_RULE, "ml")], ApiCall("list", "apiextensions.k8s.io", "customresourcedefinitions"), False),
        # wildcards
        ([Grant(STAR_RULE, None)], ApiCall("get", "kopf.dev", "clusterkopfpeerings", name="forescale"), True),
        ([Grant(STAR_RULE, None)], ApiCall("patch", "kopf.dev", "clusterkopfpeerings", name="forescale"), False),
        ([], ApiCall("get", "", "pods", namespace="ml", name="p"), False),
    ],
)
def test_rbac_allows(grants, call, allowed):
    assert rbac_allows(grants, call) is allowed


@pytest.mark.parametrize(
    ("method", "url", "call"),
    [
        ("GET", "/apis/forescale.io/v1alpha1/inferencedeployments?watch=true&resourceVersion=1",
         ApiCall("watch", "forescale.io", "inferencedeployments")),
        ("GET", "/apis/forescale.io/v1alpha1/namespaces/ml/inferencedeployments",
         ApiCall("list", "forescale.io", "inferencedeployments", namespace="ml")),
        ("PATCH", "/apis/forescale.io/v1alpha1/namespaces/ml/inferencedeployments/chat/status",
         ApiCall("patch", "forescale.io", "inferencedeployments", "status", "ml", "chat")),
        ("POST", "/apis/apps/v1/namespaces/ml/deployments", ApiCall("create", "apps", "deployments", namespace="ml")),
        ("PUT", "/apis/apps/v1/namespaces/ml/deployments/chat-a", ApiCall("update", "apps", "deployments", namespace="ml", name="chat-a")),
        ("DELETE", "/api/v1/namespaces/ml/services/chat-b", ApiCall("delete", "", "services", namespace="ml", name="chat-b")),
        ("DELETE", "/api/v1/namespaces/ml/pods", ApiCall("deletecollection", "", "pods", namespace="ml")),
        ("POST", "/api/v1/namespaces/ml/events", ApiCall("create", "", "events", namespace="ml")),
        ("GET", "/api/v1/namespaces/ml/secrets/admin", ApiCall("get", "", "secrets", namespace="ml", name="admin")),
        ("GET", "/api/v1/namespaces?watch=1", ApiCall("watch", "", "namespaces")),
        ("GET", "/api/v1/namespaces/ml", ApiCall("get", "", "namespaces", name="ml")),
        ("PATCH", "/apis/kopf.dev/v1/clusterkopfpeerings/forescale", ApiCall("patch", "kopf.dev", "clusterkopfpeerings", name="forescale")),
        ("GET", "/apis", None),
        ("GET", "/api/v1", None),
        ("GET", "/apis/forescale.io/v1alpha1", None),
        ("GET", "/version", None),
    ],
)
def test_call_from_request(method, url, call):
    assert call_from_request(method, url) == call


def test_call_from_request_rejects_unknown_methods():
    with pytest.raises(ValueError, match="unsupported HTTP method 'TRACE'"):
        call_from_request("TRACE", "/api/v1/namespaces/ml/pods")


SA = {"kind": "ServiceAccount", "name": "op", "namespace": "sys"}
OTHER_SA = {"kind": "ServiceAccount", "name": "someone-else", "namespace": "sys"}


def _role(kind, name, rules, namespace=None):
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, "rules": rules}


def _binding(kind, name, role_kind, role, subjects, namespace=None):
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, "roleRef": {"kind": role_kind, "name": role}, "subjects": subjects}


@pytest.mark.parametrize(
    ("manifests", "expected"),
    [
        ([_role("ClusterRole", "cr", [DEPLOY_RULE]), _binding("ClusterRoleBinding", "b", "ClusterRole", "cr", [SA])],
         [Grant(DEPLOY_RULE, None)]),
        # a RoleBinding to a ClusterRole grants it only in the binding's namespace
        ([_role("ClusterRole", "cr", [DEPLOY_RULE]), _binding("RoleBinding", "b", "ClusterRole", "cr", [SA], "ml")],
         [Grant(DEPLOY_RULE, "ml")]),
        ([_role("Role", "r", [DEPLOY_RULE], "ml"), _binding("RoleBinding", "b", "Role", "r", [SA], "ml")],
         [Grant(DEPLOY_RULE, "ml")]),
        # a Role in another namespace than its binding is not found
        ([_role("Role", "r", [DEPLOY_RULE], "x"), _binding("RoleBinding", "b", "Role", "r", [SA], "ml")], []),
        # bindings for other subjects and unbound roles grant nothing
        ([_role("ClusterRole", "cr", [DEPLOY_RULE]), _binding("ClusterRoleBinding", "b", "ClusterRole", "cr", [OTHER_SA])], []),
        ([_role("ClusterRole", "cr", [DEPLOY_RULE])], []),
    ],
)
def test_load_grants(manifests, expected):
    assert load_grants(manifests, "op", "sys") == expected


def test_denied_and_unused():
    grants = [Grant(DEPLOY_RULE, None)]
    calls = [
        ApiCall("get", "apps", "deployments", namespace="ml", name="a"),
        ApiCall("delete", "apps", "deployments", namespace="ml", name="a"),
        ApiCall("delete", "apps", "deployments", namespace="ml", name="a"),
    ]
    assert denied_calls(grants, calls) == [calls[1]]
    assert unused_permissions(grants, calls) == {("apps", "deployments", "list"), ("apps", "deployments", "patch")}


@pytest.mark.parametrize(
    ("record", "call"),
    [
        ({"verb": "list", "api_group": "", "resource": "pods", "subresource": "", "namespace": "ml", "name": ""},
         ApiCall("list", "", "pods", namespace="ml")),
        ({"verb": "patch", "api_group": "kopf.dev", "resource": "clusterkopfpeerings", "subresource": "", "namespace": "", "name": "forescale"},
         ApiCall("patch", "kopf.dev", "clusterkopfpeerings", name="forescale")),
    ],
)
def test_call_from_record_dicts(record, call):
    assert call_from_record(record) == call


def test_call_from_record_objects():
    """The emulated API server's RequestRecord objects convert directly."""
    request_log = pytest.importorskip("forescale_devcluster.request_log")
    record = request_log.RequestRecord("patch", "forescale.io", "inferencedeployments", "status", "ml", "chat", 200)
    assert call_from_record(record) == ApiCall("patch", "forescale.io", "inferencedeployments", "status", "ml", "chat")
