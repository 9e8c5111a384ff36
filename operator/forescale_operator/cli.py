"""`forescale operator`: run the kopf operator against the current kubeconfig (KUBECONFIG honoured)."""

from __future__ import annotations

import logging
import os
import socket
import sys
from typing import List, Optional

import typer

app = typer.Typer(add_completion=False, rich_markup_mode=None, help="Run the Forescale operator (kopf) against the current kubeconfig.")


@app.command()
def run(
    namespace: Optional[List[str]] = typer.Option(None, "-n", "--namespace",
                                                  help="Namespace to watch (repeatable); default FORESCALE_NAMESPACES."),
    all_namespaces: bool = typer.Option(False, "-A", "--all-namespaces", help="Watch every namespace."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Log at DEBUG level."),
) -> None:
    """Watch InferenceDeployments and own their pools. Settings come from FORESCALE_* variables."""
    from .config import ConfigError, check_namespaces, load_config

    try:
        config = load_config()
        check_namespaces(tuple(namespace or ()), "-n/--namespace")
    except ConfigError as exc:
        typer.echo(f"forescale operator: bad setting: {exc}", err=True)
        raise typer.Exit(2)
    namespaces = tuple(namespace or ()) or config.namespaces
    if all_namespaces and namespace:
        typer.echo("forescale operator: give either -n/--namespace or -A/--all-namespaces, not both", err=True)
        raise typer.Exit(2)
    clusterwide = all_namespaces or not namespaces
    logging.basicConfig(level=logging.DEBUG if verbose else config.logging_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)

    try:
        _check_kubeconfig()
    except Exception as exc:  # noqa: BLE001 - any kubeconfig problem is reported the same way
        typer.echo(f"forescale operator: cannot load Kubernetes credentials: {exc}", err=True)
        raise typer.Exit(1)

    import kopf
    from prometheus_client import start_http_server

    from . import registration  # noqa: F401 - registers the handlers

    try:
        start_http_server(config.metrics_port)
    except OSError as exc:
        typer.echo(f"forescale operator: FORESCALE_METRICS_PORT {config.metrics_port}: {exc}", err=True)
        raise typer.Exit(1)
    memo = kopf.Memo(config=config, clusterwide=clusterwide, namespaces=namespaces,
                     identity=config.pod_name or f"{socket.gethostname()}-{os.getpid()}")
    where = "all namespaces" if clusterwide else ", ".join(namespaces)
    log = logging.getLogger("forescale.operator")
    log.info("Starting on %s.", where)
    if config.prometheus_url is None:
        log.warning("FORESCALE_PROMETHEUS_URL is not set: a resource without spec.metrics.prometheusUrl is not "
                    "forecast or scaled, and shows phase Degraded with a MetricsUnavailable event.")
    try:
        kopf.run(clusterwide=clusterwide, namespaces=list(namespaces) if not clusterwide else [], memo=memo,
                 liveness_endpoint=f"http://0.0.0.0:{config.health_port}/healthz")
    except KeyboardInterrupt:
        pass


def _check_kubeconfig() -> None:
    from kubernetes import config as k8s_config

    try:
        k8s_config.load_incluster_config()
    except k8s_config.ConfigException:
        k8s_config.load_kube_config()
