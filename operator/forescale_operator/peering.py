"""HA through kopf peering: detect the peering CRDs, make sure our peering object exists.

With the CRDs, every replica joins the peering object `FORESCALE_PEERING`
with its own priority; the highest acts, the others pause. Without them, the
operator runs standalone and says so once.
"""

from __future__ import annotations

import logging
from typing import Iterable

from .kube.client import KubeApi
from .kube.errors import ApiError
from .kube.refs import CLUSTER_KOPF_PEERINGS, KOPF_PEERINGS, Ref

logger = logging.getLogger(__name__)


def peering_ref(clusterwide: bool) -> Ref:
    """Cluster-wide operators share a ClusterKopfPeering; namespaced ones a KopfPeering per namespace."""
    return CLUSTER_KOPF_PEERINGS if clusterwide else KOPF_PEERINGS


async def prepare_peering(api: KubeApi, name: str, clusterwide: bool, namespaces: Iterable[str]) -> bool:
    """True when peering can be used (CRD served, object present or created); False means standalone."""
    ref = peering_ref(clusterwide)
    if not await api.served(ref):
        logger.info("Running standalone: the %s CRD (kopf.dev/v1) is not installed; apply crds/kopf.dev_peerings.yaml "
                    "to run several replicas.", ref.kind)
        return False
    for namespace in ([None] if clusterwide else list(namespaces)):
        if await api.get(ref, namespace, name) is not None:
            continue
        body = {"apiVersion": ref.api_version, "kind": ref.kind, "metadata": {"name": name}}
        if namespace:
            body["metadata"]["namespace"] = namespace
        try:
            await api.create(ref, namespace, body)
            logger.info("Created %s %s%s for peering.", ref.kind, f"{namespace}/" if namespace else "", name)
        except ApiError as exc:
            if exc.status != 409:  # 409: another replica created it first
                logger.warning("Cannot create %s %s: %s; peering may not work.", ref.kind, name, exc)
    return True
