"""The chart's RBAC grants exactly what the operator needs, in cluster and namespaced mode.

OPERATOR_NEEDS is the operator's API usage per DESIGN.md (its CRD and status,
its children, events, ConfigMaps, the admin-token Secret, Pods, kopf's peering
and scanning). The tests check every needed call is allowed, nothing beyond it
is granted, and a table of calls the operator must never be able to make is
denied. test_chart_rbac_operator.py checks the real operator's requests.
"""

from __future__ import annotations

import functools

import pytest

from chart_tools import NAMESPACE, render
from rbac_rules import ApiCall, denied_calls, load_grants, rbac_allows, unused_permissions

SA_NAME = "forescale"  # release "forescale": the full name is the release name
ADMIN_SECRET = "forescale-admin"
LEASE = "forescale-operator"  # forescale_operator.leases.LEASE_NAME
WATCHED = ["ml", "ml-staging"]

#: (group, resource, verbs, why): every permission the operator's code uses, with the code path.
#: test_chart_rbac_operator.py checks the same against the real operator's requests.
OPERATOR_NEEDS = [
    ("forescale.io", "inferencedeployments", ["list", "watch", "patch"], "kopf: watch, finalizer and annotations"),
    ("forescale.io", "inferencedeployments/status", ["patch"], "status.py: merge patch of the status subresource"),
    ("forescale.io", "inferencedeployments/finalizers", ["update"],
     "children.py: blockOwnerDeletion on every child's ownerReference (OwnerReferencesPermissionEnforcement)"),
    ("apps", "deployments", ["get", "list", "watch", "create", "update", "patch"],
     "actuators/deployments.py: pools, replicas; kube/indexed.py: kopf's index the tick reads them from"),
    ("apps", "deployments/scale", ["patch"], "actuators/targets.py: a targetRef's replicas"),
    ("autoscaling", "horizontalpodautoscalers", ["list"], "actuators/targets.py: is a targetRef already scaled by an HPA"),
    ("apps", "replicasets", ["list"], "readings/kube_facts.py: the diagnosis's rollout evidence"),
    ("", "services", ["get", "list", "watch", "create", "update"], "actuators/services.py; kube/indexed.py: kopf's index"),
    ("gateway.networking.k8s.io", "httproutes", ["get", "create", "update", "patch", "delete"], "routers/gatewayapi.py"),
    ("networking.istio.io", "virtualservices", ["get", "create", "update", "patch", "delete"], "routers/istio.py"),
    ("", "events", ["create"], "events.py and kopf"),
    ("", "configmaps", ["get", "create", "update"],
     "spec.forecast.modelRef; snapshot.py; act/incident_diagnosis.py adds the diagnosis to the snapshot"),
    ("", "pods", ["list", "watch", "delete"],
     "readings/pods.py: ready pods of a pool, for admin calls, from kopf's index (kube/indexed.py); "
     "diagnosis/remedy.py: one bad pod, once per incident"),
    ("", "secrets", ["get"], "admin token, by name"),
    ("coordination.k8s.io", "leases", ["get", "create", "update"],
     "leases.py: the per-namespace Lease every operator scope takes (read, create, renew or take over)"),
]
CLUSTER_NEEDS = [
    ("apiextensions.k8s.io", "customresourcedefinitions", ["list", "watch"], "kopf's scanning"),
    ("kopf.dev", "clusterkopfpeerings", ["get", "list", "watch", "create", "patch"], "peering.py and kopf"),
]
NAMESPACED_NEEDS = [
    ("apiextensions.k8s.io", "customresourcedefinitions", ["list", "watch"], "kopf's scanning"),
    ("", "namespaces", ["list", "watch"], "kopf, when serving named namespaces"),
    ("kopf.dev", "kopfpeerings", ["get", "list", "watch", "create", "patch"], "peering.py and kopf"),
]
CLUSTER_SCOPED = {"customresourcedefinitions", "clusterkopfpeerings", "namespaces"}


def _calls(needs, namespaces: list[str | None], secret: str = ADMIN_SECRET) -> list[ApiCall]:
    calls = []
    for group, full, verbs, _ in needs:
        resource, _, sub = full.partition("/")
        scopes = [None] if resource in CLUSTER_SCOPED else namespaces
        for ns in scopes:
            for verb in verbs:
                named = {"secrets": secret, "leases": LEASE}.get(resource, "x")
                name = None if verb in ("list", "watch", "create") else named
                calls.append(ApiCall(verb, group, resource, sub, ns, name))
    return calls


def _grants(values: dict[str, str]):
    return _cached_grants(tuple(sorted(values.items())))


@functools.lru_cache(maxsize=None)
def _cached_grants(values: tuple[tuple[str, str], ...]):
    # One helm run per distinct values set keeps the table tests fast.
    manifests = render(set_values={"operator.adminTokenSecret.name": ADMIN_SECRET, **dict(values)})
    return load_grants(manifests, SA_NAME, NAMESPACE)


MODES = {
    # cluster mode: namespaced calls are made in any namespace and across all (None)
    "cluster": ({}, _calls(OPERATOR_NEEDS, ["ml", None]) + _calls(CLUSTER_NEEDS, [None])),
    "namespaced": ({"operator.namespaces": "{" + ",".join(WATCHED) + "}"}, _calls(OPERATOR_NEEDS + NAMESPACED_NEEDS, WATCHED)),
}


@pytest.mark.parametrize("mode", MODES)
def test_every_needed_call_is_allowed(mode):
    values, calls = MODES[mode]
    assert denied_calls(_grants(values), calls) == []


@pytest.mark.parametrize("mode", MODES)
def test_nothing_beyond_the_needs_is_granted(mode):
    values, calls = MODES[mode]
    assert unused_permissions(_grants(values), calls) == set()


NEVER = [
    ApiCall("list", "", "secrets", namespace="ml"),
    ApiCall("watch", "", "secrets", namespace="ml"),
    ApiCall("get", "", "secrets", namespace="ml", name="db-password"),
    ApiCall("create", "", "pods", namespace="ml"),
    ApiCall("deletecollection", "", "pods", namespace="ml"),  # one bad pod at a time, never a collection
    ApiCall("create", "", "pods", "exec", "ml", "chat-a-1"),
    ApiCall("delete", "forescale.io", "inferencedeployments", namespace="ml", name="chat"),
    ApiCall("deletecollection", "apps", "deployments", namespace="ml"),
    ApiCall("delete", "apps", "deployments", namespace="ml", name="chat-a"),  # owner references do that
    ApiCall("delete", "", "services", namespace="ml", name="chat"),
    ApiCall("update", "apps", "deployments", "scale", "ml", "embed"),  # a targetRef is patched, never replaced
    ApiCall("create", "autoscaling", "horizontalpodautoscalers", namespace="ml"),
    ApiCall("delete", "autoscaling", "horizontalpodautoscalers", namespace="ml", name="embed"),
    ApiCall("update", "forescale.io", "inferencedeployments", namespace="ml", name="chat"),
    ApiCall("patch", "", "configmaps", namespace="ml", name="chat-forecaster"),
    ApiCall("delete", "", "configmaps", namespace="ml", name="chat-forecaster"),
    ApiCall("patch", "apiextensions.k8s.io", "customresourcedefinitions", name="inferencedeployments.forescale.io"),
    ApiCall("create", "rbac.authorization.k8s.io", "rolebindings", namespace="ml"),
    ApiCall("list", "", "nodes"),
    ApiCall("get", "", "namespaces", name="ml"),
    ApiCall("delete", "kopf.dev", "clusterkopfpeerings", name="forescale"),
    # Only the operator's own Lease, by name: taking over another controller's leader election is never possible.
    ApiCall("update", "coordination.k8s.io", "leases", namespace="kube-system", name="kube-controller-manager"),
    ApiCall("get", "coordination.k8s.io", "leases", namespace="ml", name="other-operator"),
    ApiCall("delete", "coordination.k8s.io", "leases", namespace="ml", name=LEASE),
    ApiCall("patch", "coordination.k8s.io", "leases", namespace="ml", name=LEASE),
    ApiCall("list", "coordination.k8s.io", "leases", namespace="ml"),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("call", NEVER, ids=[f"{c.verb}-{c.full_resource}-{c.name or ''}" for c in NEVER])
def test_forbidden_calls_are_denied(mode, call):
    assert not rbac_allows(_grants(MODES[mode][0]), call)


@pytest.mark.parametrize(
    "call",
    [
        ApiCall("get", "apps", "deployments", namespace="other", name="x"),
        ApiCall("watch", "forescale.io", "inferencedeployments"),  # across all namespaces
        ApiCall("patch", "kopf.dev", "clusterkopfpeerings", name="forescale"),
        ApiCall("update", "coordination.k8s.io", "leases", namespace="other", name=LEASE),
    ],
)
def test_namespaced_mode_stays_in_its_namespaces(call):
    assert not rbac_allows(_grants(MODES["namespaced"][0]), call)


def test_no_secret_access_when_admin_calls_are_off():
    grants = load_grants(render(set_values={"operator.adminTokenSecret.create": "false"}), SA_NAME, NAMESPACE)
    assert not rbac_allows(grants, ApiCall("get", "", "secrets", namespace="ml", name=ADMIN_SECRET))
    assert all("secrets" not in g.rule["resources"] for g in grants)


#: The default install: the chart's own token Secret in the release namespace, copied by the operator
#: into each resource's namespace (actuators/admin_secret.py), so it may also create it there and
#: update it by name.
CHART_TOKEN = "forescale-admin-token"
COPY_NEEDS = [need if need[1] != "secrets" else
              ("", "secrets", ["get", "create", "update"], "actuators/admin_secret.py: the copy; admin token, by name")
              for need in OPERATOR_NEEDS]
#: The source Secret is read in the release namespace, watched or not.
READ_SOURCE = ApiCall("get", "", "secrets", namespace=NAMESPACE, name=CHART_TOKEN)
COPY_MODES = {
    "cluster": ({}, _calls(COPY_NEEDS, ["ml", None], CHART_TOKEN) + _calls(CLUSTER_NEEDS, [None]) + [READ_SOURCE]),
    "namespaced": ({"operator.namespaces": "{" + ",".join(WATCHED) + "}"},
                   _calls(COPY_NEEDS + NAMESPACED_NEEDS, WATCHED, CHART_TOKEN) + [READ_SOURCE]),
}


@functools.lru_cache(maxsize=None)
def _copy_grants(mode: str):
    return load_grants(render(set_values=COPY_MODES[mode][0]), SA_NAME, NAMESPACE)


@pytest.mark.parametrize("mode", COPY_MODES)
def test_default_install_copies_its_token_and_nothing_more(mode):
    calls = COPY_MODES[mode][1]
    grants = _copy_grants(mode)
    assert denied_calls(grants, calls) == []
    assert unused_permissions(grants, calls) == set()
    # Secrets other than the token stay unreadable; a copy cannot reach another namespace's token in namespaced mode.
    for call in [c for c in NEVER if c.resource == "secrets"] + [
            ApiCall("update", "", "secrets", namespace="ml", name="db-password")]:
        assert not rbac_allows(grants, call), call
    if mode == "namespaced":
        assert not rbac_allows(grants, ApiCall("create", "", "secrets", namespace="other"))
        assert not rbac_allows(grants, ApiCall("update", "", "secrets", namespace=NAMESPACE, name=CHART_TOKEN))


@pytest.mark.parametrize("mode", MODES)
def test_children_may_block_their_owners_deletion(mode):
    """Every child's ownerReference sets blockOwnerDeletion; under the
    OwnerReferencesPermissionEnforcement admission plugin that is allowed only with
    update on the owner's finalizers subresource, in each namespace the operator serves."""
    from forescale_operator.children import Owner

    assert Owner("chat", "ml", "uid").reference()["blockOwnerDeletion"] is True
    values, calls = MODES[mode]
    namespaces = {c.namespace for c in calls if c.resource == "inferencedeployments" and c.namespace is not None}
    needed = [ApiCall("update", "forescale.io", "inferencedeployments", "finalizers", ns, "chat") for ns in sorted(namespaces)]
    assert needed and denied_calls(_grants(values), needed) == []
