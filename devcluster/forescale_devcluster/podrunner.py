"""The local pod runner: the Deployment controller and the kubelet in one loop.

It lists the Deployments labelled `forescale.io/deployment` (or every one, with
`label_selector=""`: Deployments a user runs and Forescale adopts) in the emulated API
(polling: it works against any API server, watch support or not), keeps one
`LocalPod` per desired replica, rolls pods whose template changed (one extra
pod at a time, an old one leaves when a new one is ready), reports
`replicas`/`readyReplicas`/`availableReplicas`/`updatedReplicas`/
`observedGeneration` through the Deployment's status subresource, and rewrites
the Prometheus file_sd targets whenever the set of running pods changes.

Usage::

    async with PodRunner(api_url, settings=PodSettings(startup_delay_seconds=1),
                         file_sd_path="/tmp/pods.json") as runner:
        await runner.wait_ready("ml", "chat-a", 2, timeout=30)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import random
import time
from typing import Awaitable, Callable

import aiohttp

from forescale_devcluster import procs
from forescale_devcluster.podrunner_kubeapi import (
    KubeApi, KubeApiError, collection_path, object_path,
)
from forescale_devcluster.podrunner_pod import (
    RUNNER_ANNOTATION, LocalPod, PodSettings, PodView,
)
from forescale_devcluster.podrunner_revisions import record_revision
from forescale_devcluster.podrunner_sd import ScrapeTarget, write_file_sd

log = logging.getLogger(__name__)

DEPLOYMENT_LABEL = "forescale.io/deployment"
POOL_LABEL = "forescale.io/pool"
#: Kubernetes' alphabet for generated name suffixes (no vowels, no look-alikes).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(template: dict) -> str:
    """A short stable hash of a pod template (the `pod-template-hash` label)."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    return digest[:10]


def deployment_status(deployment: dict, pods: list[PodView], current_hash: str) -> dict:
    """The Deployment status a controller would report for `pods`."""
    ready = sum(p.ready for p in pods)
    desired = _desired(deployment)
    updated = sum(p.template_hash == current_hash for p in pods)
    available = "True" if ready >= desired else "False"
    status = {
        "replicas": len(pods), "readyReplicas": ready, "availableReplicas": ready,
        "updatedReplicas": updated, "unavailableReplicas": max(0, desired - ready),
        "conditions": [{"type": "Available", "status": available,
                        "reason": "MinimumReplicasAvailable" if available == "True" else "MinimumReplicasUnavailable"}],
    }
    generation = (deployment.get("metadata") or {}).get("generation")
    if generation is not None:
        status["observedGeneration"] = generation
    return status


def _desired(deployment: dict) -> int:
    replicas = (deployment.get("spec") or {}).get("replicas")
    return 1 if replicas is None else max(0, int(replicas))


def _removal_order(pods: list[LocalPod]) -> list[LocalPod]:
    """Pods in the order a ReplicaSet removes them: not ready first, then newest first."""
    return sorted(pods, key=lambda p: (p.view.ready, -p.view.created))


class PodRunner:
    """Runs the Deployments of one API server as local processes."""

    def __init__(self, api_url: str, *, namespaces: list[str] | None = None, settings: PodSettings | None = None,
                 file_sd_path: str | None = None, poll_interval_seconds: float = 0.5,
                 label_selector: str = DEPLOYMENT_LABEL, max_pods: int = 64, seed: int | None = None,
                 on_pod_ready: Callable[[PodView], Awaitable[None]] | None = None) -> None:
        """`on_pod_ready` runs each time a pod's process first answers readiness, before the pod is reported Ready."""
        if poll_interval_seconds <= 0:
            raise ValueError(f"poll_interval_seconds must be > 0, got {poll_interval_seconds}")
        self.settings = settings or PodSettings()
        self.settings.validate()
        self.api = KubeApi(api_url)
        self.namespaces = namespaces
        self.file_sd_path = file_sd_path
        self.poll_interval = poll_interval_seconds
        self.label_selector = label_selector
        #: a guard for two shared cores: a runaway replica count must not fork-bomb the machine
        self.max_pods = max_pods
        self.on_pod_ready = on_pod_ready
        self._rng = random.Random(seed)
        self._pods: dict[tuple[str, str], list[LocalPod]] = {}
        self._reported: dict[tuple[str, str], dict] = {}
        self._stopping: set[asyncio.Task] = set()
        self._changed = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._last_targets: list[ScrapeTarget] | None = None
        self.last_error: str | None = None

    # -- public API ---------------------------------------------------------
    async def start(self) -> None:
        """Remove pods left by an earlier runner, write an empty file_sd, and start reconciling."""
        await self._remove_stale_pods()
        self._write_targets()
        self._task = asyncio.create_task(self._loop(), name="pod-runner")

    async def stop(self) -> None:
        """Stop reconciling, stop every process and delete every Pod object this runner made."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        pods = [pod for group in self._pods.values() for pod in group]
        self._pods.clear()
        # Shutting down: nothing routes any more, so no draining.
        await asyncio.gather(*(pod.stop(drain=False) for pod in pods), *self._stopping, return_exceptions=True)
        self._write_targets()
        await self.api.close()

    async def __aenter__(self) -> "PodRunner":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def pods(self, namespace: str | None = None, deployment: str | None = None) -> list[PodView]:
        """Snapshot of the running pods, optionally of one Deployment."""
        return [pod.view for (ns, name), group in self._pods.items() for pod in group
                if (namespace is None or ns == namespace) and (deployment is None or name == deployment)]

    async def wait_ready(self, namespace: str, deployment: str, count: int, timeout: float) -> list[PodView]:
        """Wait until `deployment` has exactly `count` pods, all ready; raise TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            views = self.pods(namespace, deployment)
            if len(views) == count and all(v.ready for v in views):
                return views
            if time.monotonic() > deadline:
                state = [(v.name, v.ready) for v in views]
                raise TimeoutError(f"{namespace}/{deployment}: wanted {count} ready pods within {timeout:g} s, "
                                   f"have {state}; last error: {self.last_error}")
            await asyncio.sleep(0.1)

    # -- reconcile loop -----------------------------------------------------
    async def _loop(self) -> None:
        while True:
            try:
                problems = await self.reconcile_once()
                error = "; ".join(problems) or None
            except (KubeApiError, aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
                # The API server may restart under us (tests do that); keep trying.
                error = str(exc)
            if error and error != self.last_error:
                log.warning("pod runner: %s", error)  # once per distinct problem, not once per tick
            self.last_error = error
            self._changed.clear()
            await procs.wait_event(self._changed, self.poll_interval)

    async def _list_deployments(self) -> list[dict]:
        if self.namespaces is None:
            return await self.api.list(collection_path("apps/v1", "deployments", None),
                                       label_selector=self.label_selector)
        found: list[dict] = []
        for namespace in self.namespaces:
            found += await self.api.list(collection_path("apps/v1", "deployments", namespace),
                                         label_selector=self.label_selector)
        return found

    async def reconcile_once(self) -> list[str]:
        """One pass: match pods to every Deployment, report status, write targets; returns problems."""
        problems: list[str] = []
        deployments = await self._list_deployments()
        await self._drop_deleted_pods()
        seen: set[tuple[str, str]] = set()
        for deployment in deployments:
            meta = deployment.get("metadata") or {}
            key = (meta.get("namespace") or "default", meta.get("name", ""))
            if not key[1] or (meta.get("deletionTimestamp")):
                continue
            seen.add(key)
            problems += await self._reconcile_deployment(key, deployment)
        for key in [k for k in self._pods if k not in seen]:
            # The Deployment is gone: its pods go too (the garbage collector's job).
            for pod in self._pods.pop(key):
                self._stop_in_background(pod)
            self._reported.pop(key, None)
        self._write_targets()
        return problems

    async def _reconcile_deployment(self, key: tuple[str, str], deployment: dict) -> list[str]:
        desired = _desired(deployment)
        current = template_hash((deployment.get("spec") or {}).get("template") or {})
        problems = []
        try:
            await record_revision(self.api, deployment, current)
        except KubeApiError as exc:  # an API without ReplicaSets: the pods still run
            problems.append(f"{key[0]}/{key[1]}: revision not recorded: {exc}")
        group = self._pods.setdefault(key, [])
        new = [p for p in group if p.view.template_hash == current]
        old = [p for p in group if p.view.template_hash != current]
        # Old pods leave as new ones become ready (maxUnavailable 0).
        keep_old = max(0, desired - sum(p.view.ready for p in new))
        for pod in _removal_order(old)[: max(0, len(old) - keep_old)]:
            self._remove(key, pod)
        for pod in _removal_order(new)[: max(0, len(new) - desired)]:
            self._remove(key, pod)
        group = self._pods[key]
        old_left = sum(p.view.template_hash != current for p in group)
        new_count = len(group) - old_left
        # During a roll one pod above the desired count may exist (maxSurge 1).
        limit = desired + (1 if old_left else 0)
        to_start = min(desired - new_count, limit - len(group))
        for _ in range(max(0, to_start)):
            if sum(len(g) for g in self._pods.values()) >= self.max_pods:
                problems.append(f"pod limit {self.max_pods} reached; {key[0]}/{key[1]} not fully scaled")
                break
            await self._start_pod(key, deployment, current)
        status = deployment_status(deployment, [p.view for p in self._pods[key]], current)
        if status != self._reported.get(key):
            answer = await self.api.patch_status(object_path("apps/v1", "deployments", *key), status)
            if answer is not None:
                self._reported[key] = status
        return problems

    async def _start_pod(self, key: tuple[str, str], deployment: dict, current_hash: str) -> None:
        suffix = "".join(self._rng.choice(_SUFFIX_ALPHABET) for _ in range(5))
        taken = {p.view.port for group in self._pods.values() for p in group}
        port = procs.free_port()
        while port in taken:  # the kernel may hand out a port one of our stopped-for-now pods still owns
            port = procs.free_port()
        pod = LocalPod(self.api, self.settings, namespace=key[0], name=f"{key[1]}-{current_hash}-{suffix}",
                       deployment=deployment, template_hash=current_hash, port=port,
                       on_change=self._changed.set, on_ready=self.on_pod_ready)
        # Tracked before it starts: a stop() arriving mid-start must still find and stop it.
        self._pods[key].append(pod)
        try:
            await pod.start()
        except (KubeApiError, aiohttp.ClientError, asyncio.TimeoutError, OSError):
            self._pods[key].remove(pod)  # nothing was created
            raise

    async def _drop_deleted_pods(self) -> None:
        """Stop the processes of pods deleted through the API (`kubectl delete pod`), as a kubelet does.

        The Deployment's pass below then starts replacements, as a ReplicaSet would.
        """
        if not any(self._pods.values()):
            return
        present: set[tuple[str, str]] = set()
        for namespace in self.namespaces if self.namespaces is not None else [None]:
            for obj in await self.api.list(collection_path("v1", "pods", namespace)):
                meta = obj.get("metadata") or {}
                if not meta.get("deletionTimestamp"):
                    present.add((meta.get("namespace") or namespace or "default", meta.get("name", "")))
        settled = time.time() - 1.0  # a pod created a moment ago may be missing from a cached list
        for group in self._pods.values():
            for pod in [p for p in group if (p.view.namespace, p.view.name) not in present
                        and p.view.created < settled]:
                log.info("pod runner: pod %s/%s was deleted through the API; stopping it",
                         pod.view.namespace, pod.view.name)
                group.remove(pod)
                self._stop_in_background(pod, delete=False)

    def _remove(self, key: tuple[str, str], pod: LocalPod) -> None:
        self._pods[key].remove(pod)
        self._stop_in_background(pod)

    def _stop_in_background(self, pod: LocalPod, *, delete: bool = True) -> None:
        # Stopping waits up to the grace period; the loop must not.
        task = asyncio.create_task(pod.stop(delete=delete), name=f"stop {pod.view.name}")
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    async def _remove_stale_pods(self) -> None:
        """Delete Pod objects that a previous runner made; their processes are gone."""
        namespaces = self.namespaces if self.namespaces is not None else [None]
        for namespace in namespaces:
            try:
                pods = await self.api.list(collection_path("v1", "pods", namespace), label_selector=self.label_selector)
            except (KubeApiError, aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
                log.warning("pod runner: cannot list old pods: %s", exc)
                continue
            for pod in pods:
                meta = pod.get("metadata") or {}
                if RUNNER_ANNOTATION in (meta.get("annotations") or {}):
                    with contextlib.suppress(KubeApiError, aiohttp.ClientError, asyncio.TimeoutError):
                        await self.api.delete(object_path("v1", "pods",
                                                          meta.get("namespace") or namespace or "default", meta["name"]))

    def _write_targets(self) -> None:
        if not self.file_sd_path:
            return
        targets = [ScrapeTarget(address=f"127.0.0.1:{v.port}", namespace=v.namespace, pod=v.name,
                                deployment=v.labels.get(DEPLOYMENT_LABEL, v.deployment),
                                pool=v.labels.get(POOL_LABEL, ""))
                   for v in self.pods() if v.running]
        if targets != self._last_targets:
            write_file_sd(self.file_sd_path, targets)
            self._last_targets = targets


def main(argv: list[str] | None = None) -> int:
    """`python -m forescale_devcluster.podrunner --api URL`: run pods until interrupted."""
    import argparse
    import os
    import shlex
    import sys

    parser = argparse.ArgumentParser(prog="python -m forescale_devcluster.podrunner", description=__doc__.split("\n")[0])
    parser.add_argument("--api", required=True, help="API server URL, e.g. http://127.0.0.1:8001")
    parser.add_argument("-n", "--namespace", action="append", help="namespace to serve (repeatable; default: all)")
    parser.add_argument("--file-sd", help="write Prometheus file_sd targets here")
    parser.add_argument("--startup-delay", type=float, default=5.0, help="emulated model-load seconds (default 5)")
    parser.add_argument("--command", help="pod command template, e.g. 'python -m http.server {port}'")
    parser.add_argument("--log-dir", help="per-pod output files go here")
    parser.add_argument("--max-pods", type=int, default=64)
    parser.add_argument("--selector", default=DEPLOYMENT_LABEL,
                        help=f"label selector of the Deployments to run (default: {DEPLOYMENT_LABEL}, the ones "
                             f"Forescale makes; '' runs every Deployment, as a cluster would)")
    args = parser.parse_args(argv)
    if args.startup_delay < 0:
        parser.error(f"--startup-delay must be >= 0, got {args.startup_delay}")
    settings = PodSettings(startup_delay_seconds=args.startup_delay, log_dir=args.log_dir,
                           admin_token=os.environ.get("FORESCALE_ADMIN_TOKEN") or None)
    if args.command:
        settings.command = tuple(shlex.split(args.command))
    try:
        runner = PodRunner(args.api, namespaces=args.namespace, settings=settings, file_sd_path=args.file_sd,
                           max_pods=args.max_pods, label_selector=args.selector)
    except ValueError as exc:
        print(f"podrunner: {exc}", file=sys.stderr)
        return 2

    async def serve() -> None:
        async with runner:
            await procs.wait_for_termination()

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    asyncio.run(serve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
