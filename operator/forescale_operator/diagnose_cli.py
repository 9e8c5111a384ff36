"""`forescale diagnose NAME [-n NS] [--json]`: the root-cause checklist on demand (docs/diagnosis.md).

Reads the InferenceDeployment from the Kubernetes API (the current kubeconfig,
as `forescale operator` does), gathers the evidence for one pool from
Prometheus (`readings.prom_query`) and the Kubernetes API
(`readings.kube_facts`), runs `diagnose`, and prints the ranked causes, or
one JSON object with `--json`. It runs outside an incident too: a healthy
pool suspects nothing.

Prometheus is `--prometheus-url`, else the resource's `spec.metrics.prometheusUrl`,
else `FORESCALE_PROMETHEUS_URL`. Missing evidence is never an error: with
Prometheus down, the rules that read it say "unknown" with the reason and the
exit status is still 0. Exit 2: a bad option, or no such resource (one line
naming it); exit 1: the Kubernetes API could not be read.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import math
import os
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, TextIO

import typer

from forescale_predictor.errors import MetricsUnavailable

from .diagnosis import ClosablePromQuery, Diagnosis, Evidence, Windows, diagnose, gather_evidence
from .diagnosis.rules import RULES
from .kube.client import KubeApi
from .kube.errors import ApiError
from .kube.refs import INFERENCE_DEPLOYMENTS
from .readings.kube_facts import read_kube_facts, status_model_health, with_model_health

POOLS = ("a", "b")
#: Kubernetes object names (RFC 1123 subdomains); anything else never reaches a URL path
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_CLIENT_FAILURE = "failed: MetricsUnavailable: "


@dataclass(frozen=True)
class DiagnoseRequest:
    """What the command line asked for, validated by `check`."""

    name: str
    namespace: str
    pool: str = "a"
    json_out: bool = False
    prometheus_url: str | None = None
    ago_seconds: float = 0.0
    timeout_s: float = 5.0

    def check(self) -> str | None:
        """The first problem with the request, or None."""
        for what, value in (("NAME", self.name), ("--namespace", self.namespace)):
            if not _NAME.match(value) or len(value) > 253:
                return f"{what} {value!r} is not a valid Kubernetes name"
        if self.pool not in POOLS:
            return f"--pool must be a or b, got {self.pool!r}"
        if self.prometheus_url is not None and not self.prometheus_url.startswith(("http://", "https://")):
            return f"--prometheus-url must be an http(s) URL, got {self.prometheus_url!r}"
        if not math.isfinite(self.ago_seconds) or self.ago_seconds < 0:
            return f"--ago must be a number of seconds >= 0, got {self.ago_seconds:g}"
        if not math.isfinite(self.timeout_s) or not 0 < self.timeout_s <= 60:
            return f"--timeout must be a number of seconds in (0, 60], got {self.timeout_s:g}"
        return None


class NoPrometheus:
    """A `PromQuery` for when there is no usable Prometheus URL: every query fails with the reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    async def scalar(self, query: str) -> float | None:
        raise MetricsUnavailable(self.reason)

    async def vector(self, query: str) -> dict[str, float]:
        raise MetricsUnavailable(self.reason)

    async def close(self) -> None:
        return None


def prometheus_url(request: DiagnoseRequest, resource: Mapping[str, Any], env: Mapping[str, str]) -> tuple[str | None, str]:
    """(URL, where it came from), or (None, why there is none)."""
    if request.prometheus_url:
        return request.prometheus_url, "--prometheus-url"
    metrics = ((resource.get("spec") or {}).get("metrics") or {})
    spec_url = metrics.get("prometheusUrl")
    if isinstance(spec_url, str) and spec_url.startswith(("http://", "https://")):
        return spec_url, "spec.metrics.prometheusUrl"
    env_url = (env.get("FORESCALE_PROMETHEUS_URL") or "").strip()
    if env_url.startswith(("http://", "https://")):
        return env_url, "FORESCALE_PROMETHEUS_URL"
    if env_url:
        return None, f"FORESCALE_PROMETHEUS_URL is not an http(s) URL: {env_url!r}"
    return None, ("no Prometheus URL: pass --prometheus-url, set spec.metrics.prometheusUrl "
                  "or FORESCALE_PROMETHEUS_URL")


async def run(request: DiagnoseRequest, *, kube: KubeApi, make_prom: Callable[[str, float, float], ClosablePromQuery],
              env: Mapping[str, str], out: TextIO, err: TextIO, clock: Callable[[], float] = time.time) -> int:
    """The command, with its clients injected; returns the exit status."""
    problem = request.check()
    if problem:
        print(f"forescale diagnose: {problem}", file=err)
        return 2
    where = f"{request.namespace}/{request.name}"
    try:
        resource = await kube.get(INFERENCE_DEPLOYMENTS, request.namespace, request.name)
    except ApiError as exc:
        print(f"forescale diagnose: cannot read InferenceDeployment {where}: {_one_line(exc)}", file=err)
        return 1
    if resource is None:
        print(f"forescale diagnose: InferenceDeployment {where} not found", file=err)
        return 2
    started = clock()
    at = started - request.ago_seconds
    windows = Windows(ago_seconds=int(request.ago_seconds))
    url, source = prometheus_url(request, resource, env)
    prom: ClosablePromQuery = make_prom(url, request.timeout_s, started) if url else NoPrometheus(source)

    # The latency model's health is the operator's now: it says nothing of an instant in the past.
    health = None if request.ago_seconds else status_model_health(resource.get("status"), request.pool)
    health_why = ("--ago: the latency model's health is known only now" if request.ago_seconds
                  else f"status.pools.{request.pool}.model.health is not set (no model fitted yet)")

    async def facts():
        found = await read_kube_facts(kube, request.namespace, request.name, request.pool, now=at,
                                      window_seconds=windows.now_seconds + windows.before_seconds)
        return with_model_health(found, health, health_why)

    try:
        evidence = await gather_evidence(prom, request.namespace, request.name, pool=request.pool, facts=facts,
                                         windows=windows, timeout_s=request.timeout_s)
    finally:
        await prom.close()
    diagnosis = diagnose(evidence)
    notes = _preset_note(resource)
    if request.json_out:
        print(json.dumps(report_json(request, diagnosis, evidence, at, url, source, notes), allow_nan=False), file=out)
    else:
        print(render_table(request, diagnosis, evidence, at, url, source, notes), file=out)
    return 0


def report_json(request: DiagnoseRequest, diagnosis: Diagnosis, evidence: Evidence, at: float, url: str | None,
                source: str, notes: list[str]) -> dict[str, Any]:
    """The `--json` object: the diagnosis (top, message, findings), the evidence, and where it came from."""
    return {
        "resource": f"{request.namespace}/{request.name}",
        "pool": request.pool,
        "at": _iso(at),
        "windows": {"now_seconds": Windows().now_seconds, "before_seconds": Windows().before_seconds},
        "prometheus": url,
        "prometheus_from": source if url else None,
        **diagnosis.to_json(),
        "evidence": evidence.to_json(),
        "notes": notes,
    }


def render_table(request: DiagnoseRequest, diagnosis: Diagnosis, evidence: Evidence, at: float, url: str | None,
                 source: str, notes: list[str]) -> str:
    """The ranked causes as a table, the top cause's message, and the missing evidence grouped by reason."""
    w = Windows()
    lines = [f"InferenceDeployment {request.namespace}/{request.name}, pool {request.pool}, at {_iso(at)}: "
             f"the last {w.now_seconds} s against the {w.before_seconds} s before",
             f"Prometheus: {url} (from {source})" if url else f"Prometheus: none ({source})"]
    lines += [f"Note: {note}" for note in notes]
    width = max(len(rule.cause) for rule in RULES)
    lines += ["", f"{'#':>2}  {'CAUSE':<{width}}  {'STATUS':<9}  {'SCORE':>5}  EVIDENCE"]
    for i, finding in enumerate(diagnosis.findings, 1):
        score = f"{finding.score:.2f}" if finding.status == "suspected" else "-"
        lines.append(f"{i:>2}  {finding.cause:<{width}}  {finding.status:<9}  {score:>5}  {finding.summary}")
    lines.append("")
    if diagnosis.top is not None:
        lines.append(f"Top cause: {diagnosis.top.cause}. {diagnosis.message}")
    else:
        unknown = sum(1 for f in diagnosis.findings if f.status == "unknown")
        lines.append("No cause suspected" + (f"; {unknown} of {len(diagnosis.findings)} rules could not tell "
                                               "(missing evidence below)." if unknown else "."))
    missing = missing_by_reason(evidence)
    if missing:
        lines += ["", "Missing evidence:"]
        for reason, names in missing:
            shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
            lines.append(f"  {reason} ({shown})")
    return "\n".join(lines)


def missing_by_reason(evidence: Evidence) -> list[tuple[str, list[str]]]:
    """(reason, field names) for every missing field or side, the reasons met most first."""
    groups: dict[str, list[str]] = {}
    for key, reason in (evidence.missing_why or {}).items():
        text = reason[len(_CLIENT_FAILURE):] if reason.startswith(_CLIENT_FAILURE) else reason
        groups.setdefault(text, []).append(key)
    return sorted(((r, sorted(names)) for r, names in groups.items()), key=lambda item: (-len(item[1]), item[0]))


def _preset_note(resource: Mapping[str, Any]) -> list[str]:
    metrics = ((resource.get("spec") or {}).get("metrics") or {})
    preset = metrics.get("preset") or "forescale"
    if preset != "forescale" or metrics.get("latencyQuery") or metrics.get("rateQuery"):
        return [f"the checklist reads the forescale_* series of Forescale's model server; this resource's metrics "
                f"preset is {preset!r}, so its evidence may be missing"]
    return []


def _iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _one_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:300]


# -- the command line ----------------------------------------------------------------------------

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Run the root-cause checklist on one InferenceDeployment now (docs/diagnosis.md).")


@app.command()
def main(
    name: str = typer.Argument(..., metavar="NAME", help="The InferenceDeployment's name."),
    namespace: Optional[str] = typer.Option(None, "-n", "--namespace", help="Its namespace (default: the kubeconfig's)."),
    json_out: bool = typer.Option(False, "--json", help="Print exactly one JSON object on stdout."),
    pool: str = typer.Option("a", help="The pool to diagnose: a (where incidents start) or b."),
    prometheus_url: Optional[str] = typer.Option(None, help="Prometheus to read (default: spec.metrics.prometheusUrl, "
                                                             "then FORESCALE_PROMETHEUS_URL)."),
    ago: float = typer.Option(0.0, help="Diagnose the instant this many seconds ago (an incident already past)."),
    timeout: float = typer.Option(5.0, help="Seconds each Prometheus query and Kubernetes read may take."),
) -> None:
    """Rank the causes (overload, degraded pods, one bad pod, cache failure, memory pressure, rollout, request mix)
    from the last minute against the ten before."""
    request = DiagnoseRequest(name=name, namespace=namespace or _default_namespace(), pool=pool, json_out=json_out,
                              prometheus_url=prometheus_url, ago_seconds=ago, timeout_s=timeout)
    problem = request.check()
    if problem:
        typer.echo(f"forescale diagnose: {problem}", err=True)
        raise typer.Exit(2)
    raise typer.Exit(asyncio.run(_run_with_real_clients(request)))


async def _run_with_real_clients(request: DiagnoseRequest) -> int:
    from .kube.http import Connection, HttpKubeApi
    from .readings.prom_query import HttpPromQuery

    try:
        connection = Connection.from_environment(user_agent="forescale-diagnose")
    except Exception as exc:  # noqa: BLE001 - any kubeconfig problem is reported the same way
        print(f"forescale diagnose: cannot load Kubernetes credentials: {_one_line(exc)}", file=sys.stderr)
        return 1
    kube = HttpKubeApi(connection, timeout=max(10.0, request.timeout_s))
    try:
        return await run(request, kube=kube, env=os.environ, out=sys.stdout, err=sys.stderr,
                         make_prom=lambda url, timeout_s, at: HttpPromQuery(url, timeout_s=timeout_s, at=at))
    finally:
        await kube.close()


def _default_namespace() -> str:
    """The kubeconfig context's namespace, the pod's own in a cluster, else `default` (as kubectl does)."""
    try:
        with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace", encoding="utf-8") as f:
            return f.read().strip() or "default"
    except OSError:
        pass
    try:
        from kubernetes import config as k8s_config

        _, active = k8s_config.list_kube_config_contexts()
        return (active or {}).get("context", {}).get("namespace") or "default"
    except Exception:  # noqa: BLE001 - no kubeconfig: `default`, and the API read then says what is wrong
        return "default"
