"""The kinds the operator reads and writes, addressed by group/version/plural."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Ref:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The REST path, e.g. /apis/apps/v1/namespaces/ml/deployments/chat-a/status."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if subresource:
            base += f"/{subresource}"
        return base


INFERENCE_DEPLOYMENTS = Ref("forescale.io", "v1alpha1", "inferencedeployments", "InferenceDeployment")
DEPLOYMENTS = Ref("apps", "v1", "deployments", "Deployment")
REPLICA_SETS = Ref("apps", "v1", "replicasets", "ReplicaSet")
PODS = Ref("", "v1", "pods", "Pod")
SERVICES = Ref("", "v1", "services", "Service")
EVENTS = Ref("", "v1", "events", "Event")
HTTP_ROUTES = Ref("gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute")
VIRTUAL_SERVICES = Ref("networking.istio.io", "v1", "virtualservices", "VirtualService")
KOPF_PEERINGS = Ref("kopf.dev", "v1", "kopfpeerings", "KopfPeering")
CLUSTER_KOPF_PEERINGS = Ref("kopf.dev", "v1", "clusterkopfpeerings", "ClusterKopfPeering", namespaced=False)
CONFIG_MAPS = Ref("", "v1", "configmaps", "ConfigMap")
#: the coordination Lease every operator takes per namespace (leases.py)
LEASES = Ref("coordination.k8s.io", "v1", "leases", "Lease")
SECRETS = Ref("", "v1", "secrets", "Secret")
PODS = Ref("", "v1", "pods", "Pod")
HORIZONTAL_POD_AUTOSCALERS = Ref("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
