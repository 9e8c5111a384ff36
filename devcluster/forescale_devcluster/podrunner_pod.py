"""One emulated pod: a Pod object in the API and a real local process behind it.

This is the kubelet's half of the pod runner. It creates the Pod object, starts
the container's process, waits out the emulated model-load time, probes
`/readyz`, reports readiness through the Pod's status subresource, keeps
probing, and restarts a process that dies after an exponential back-off
(restartPolicy Always, the kubelet's CrashLoopBackOff).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import datetime as dt
import logging
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable

import aiohttp

from forescale_devcluster import procs
from forescale_devcluster.podrunner_kubeapi import KubeApi, KubeApiError, collection_path, object_path
from forescale_devcluster.podrunner_volumes import VolumeNotReady, mount_secrets, rewrite_paths, secret_files

log = logging.getLogger(__name__)

#: What a pod runs unless told otherwise: the emulated-GPU model server (no torch).
DEFAULT_COMMAND: tuple[str, ...] = (
    "{python}", "-m", "forescale_cli.main", "serve", "--emulate-gpu", "demo",
    "--host", "127.0.0.1", "--port", "{port}", "--precision", "{precision}", "--enable-faults",
)

#: Annotation that tells the operator, the gateway and people where a pod listens.
PORT_ANNOTATION = "forescale.io/port"
#: Annotation that marks pods made by a pod runner, so a new runner can clean up after a dead one.
RUNNER_ANNOTATION = "forescale.io/pod-runner"
PRECISION_LABEL = "forescale.io/precision"
#: seconds between tries to mount a volume whose Secret is missing (the kubelet retries too)
VOLUME_RETRY_SECONDS = 1.0


@dataclass
class PodSettings:
    """How the runner's pods behave; one instance shared by all pods."""

    #: argv template; fields: {python} {port} {precision} {pod} {namespace} {deployment}
    command: tuple[str, ...] = DEFAULT_COMMAND
    #: emulated model-load time: a pod is never Ready sooner than this after its process starts
    startup_delay_seconds: float = 5.0
    #: give up waiting for /readyz after this long and restart the process
    ready_timeout_seconds: float = 60.0
    #: path probed for readiness, first after the start-up delay, then every probe period
    readiness_path: str = "/readyz"
    probe_period_seconds: float = 5.0
    probe_failure_threshold: int = 3
    #: restart back-off: base * 2**(n-1), capped (the kubelet uses 10 s and 300 s)
    backoff_base_seconds: float = 10.0
    backoff_cap_seconds: float = 300.0
    #: a process that ran this long resets the back-off (the kubelet uses 10 minutes)
    backoff_reset_seconds: float = 600.0
    #: SIGTERM grace before SIGKILL (terminationGracePeriodSeconds)
    stop_grace_seconds: float = 5.0
    #: a removed pod keeps serving this long after its object is deleted (a preStop sleep), longer
    #: than the gateway's 1 s refresh, so scale-down causes no connection errors
    drain_seconds: float = 2.0
    #: put into every pod's environment as FORESCALE_ADMIN_TOKEN when set
    admin_token: str | None = None
    #: extra environment for every pod (after the template's; e.g. thread limits)
    extra_env: dict[str, str] = field(default_factory=lambda: {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    #: per-pod stdout/stderr files go here; None discards them
    log_dir: str | None = None

    def validate(self) -> None:
        """Raise ValueError naming the first setting that cannot work."""
        validate_command(self.command)
        at_least_zero = ("startup_delay_seconds", "backoff_reset_seconds", "drain_seconds")
        above_zero = ("ready_timeout_seconds", "probe_period_seconds", "backoff_base_seconds",
                      "backoff_cap_seconds", "stop_grace_seconds")
        for name in at_least_zero:
            if not getattr(self, name) >= 0:
                raise ValueError(f"PodSettings.{name} must be >= 0, got {getattr(self, name)}")
        for name in above_zero:
            if not getattr(self, name) > 0:
                raise ValueError(f"PodSettings.{name} must be > 0, got {getattr(self, name)}")
        if self.probe_failure_threshold < 1:
            raise ValueError(f"PodSettings.probe_failure_threshold must be >= 1, got {self.probe_failure_threshold}")
        if not self.readiness_path.startswith("/"):
            raise ValueError(f"PodSettings.readiness_path must start with '/', got {self.readiness_path!r}")


@dataclass
class PodView:
    """What the rest of the runner (and its users) may read about a pod."""

    namespace: str
    name: str
    deployment: str
    labels: dict[str, str]
    port: int
    template_hash: str
    created: float
    ready: bool = False
    running: bool = False
    restarts: int = 0
    pid: int | None = None

    @property
    def url(self) -> str:
        """Base URL of the pod's server."""
        return f"http://127.0.0.1:{self.port}"


COMMAND_FIELDS = ("python", "port", "precision", "pod", "namespace", "deployment")


def validate_command(command: tuple[str, ...] | list[str]) -> None:
    """Raise ValueError naming the problem when `command` cannot be filled in for a pod."""
    if not command or not all(isinstance(part, str) for part in command):
        raise ValueError(f"pod command must be a non-empty list of strings, got {command!r}")
    sample = dict.fromkeys(COMMAND_FIELDS, "x")
    for part in command:
        try:
            part.format(**sample)
        except (KeyError, IndexError) as exc:
            raise ValueError(f"pod command part {part!r} uses an unknown field {exc}; "
                             f"known fields: {', '.join(COMMAND_FIELDS)}") from None
        except ValueError as exc:
            raise ValueError(f"pod command part {part!r} is not a valid template: {exc}") from None


def _now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class LocalPod:
    """A pod of one Deployment, backed by one local process."""

    def __init__(self, api: KubeApi, settings: PodSettings, *, namespace: str, name: str, deployment: dict,
                 template_hash: str, port: int, on_change: Callable[[], None],
                 on_ready: Callable[[PodView], Awaitable[None]] | None = None) -> None:
        self.api = api
        self.settings = settings
        meta = deployment.get("metadata") or {}
        self.template = copy.deepcopy((deployment.get("spec") or {}).get("template") or {})
        labels = dict((self.template.get("metadata") or {}).get("labels") or {})
        labels["pod-template-hash"] = template_hash
        self.view = PodView(namespace=namespace, name=name, deployment=meta.get("name", ""), labels=labels,
                            port=port, template_hash=template_hash, created=time.time())
        self._owner_uid = meta.get("uid")
        self._on_change = on_change
        self._on_ready = on_ready
        self._task: asyncio.Task | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._start_time = _now_iso()
        self._stopping = False
        #: secret volumes written for the process (podrunner_volumes.py): mountPath -> local folder
        self._mounted: dict = {}
        self._volume_root: str | None = None
        self._volume_problem: str | None = None

    @property
    def path(self) -> str:
        return object_path("v1", "pods", self.view.namespace, self.view.name)

    # -- the Pod object ---------------------------------------------------
    def manifest(self) -> dict:
        """The Pod object as created in the API."""
        tmeta = self.template.get("metadata") or {}
        spec = copy.deepcopy(self.template.get("spec") or {})
        containers = spec.get("containers") or [{"name": "server"}]
        # Every pod shares 127.0.0.1, so each gets its own port; the first
        # container is the one that is emulated.
        containers[0]["ports"] = [{"name": "http", "containerPort": self.view.port, "protocol": "TCP"}]
        spec["containers"] = containers
        spec["nodeName"] = "local"
        annotations = dict(tmeta.get("annotations") or {})
        annotations[PORT_ANNOTATION] = str(self.view.port)
        annotations[RUNNER_ANNOTATION] = "true"
        meta = {"name": self.view.name, "namespace": self.view.namespace, "labels": self.view.labels,
                "annotations": annotations}
        if self._owner_uid:
            meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": self.view.deployment,
                                        "uid": self._owner_uid, "controller": True, "blockOwnerDeletion": True}]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    def status(self, *, waiting_reason: str | None = None) -> dict:
        """The Pod's status as the kubelet would report it now."""
        ready = "True" if self.view.ready else "False"
        now = _now_iso()
        container = ((self.template.get("spec") or {}).get("containers") or [{}])[0].get("name", "server")
        if self.view.running:
            state = {"running": {"startedAt": now}}
        else:
            state = {"waiting": {"reason": waiting_reason or "ContainerCreating"}}
        return {
            "phase": "Running" if self.view.running or self.view.restarts else "Pending",
            "hostIP": "127.0.0.1", "podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}],
            "startTime": self._start_time,
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": self._start_time},
                {"type": "Initialized", "status": "True", "lastTransitionTime": self._start_time},
                {"type": "ContainersReady", "status": ready, "lastTransitionTime": now},
                {"type": "Ready", "status": ready, "lastTransitionTime": now},
            ],
            "containerStatuses": [{"name": container, "ready": self.view.ready, "started": self.view.running,
                                   "restartCount": self.view.restarts, "state": state,
                                   "image": (self.template.get("spec") or {}).get("containers", [{}])[0].get("image", "")}],
        }

    async def _report(self, **kwargs: str) -> None:
        """Write the status subresource; API hiccups are logged, never fatal."""
        self._on_change()
        if self._stopping:
            return
        try:
            await self.api.patch_status(self.path, self.status(**kwargs))
        except (KubeApiError, aiohttp.ClientError, asyncio.TimeoutError) as exc:
            log.warning("pod %s/%s: status not written: %s", self.view.namespace, self.view.name, exc)

    # -- the process --------------------------------------------------------
    def precision(self) -> str:
        """The precision the server starts in: container env, then pod label, then fp16."""
        env = self._container_env_literal()
        return env.get("FORESCALE_PRECISION") or self.view.labels.get(PRECISION_LABEL) or "fp16"

    def _container(self) -> dict:
        return ((self.template.get("spec") or {}).get("containers") or [{}])[0]

    def _container_env_literal(self) -> dict[str, str]:
        return {e["name"]: str(e["value"]) for e in self._container().get("env") or []
                if "name" in e and "value" in e}

    async def environment(self) -> dict[str, str]:
        """The process environment: ours, the container's env (values, fieldRefs, secretKeyRefs), the runner's."""
        env = dict(os.environ)
        for entry in self._container().get("env") or []:
            name = entry.get("name")
            if not name:
                continue
            if "value" in entry:
                env[name] = str(entry["value"])
            elif "valueFrom" in entry:
                value = await self._value_from(entry["valueFrom"])
                if value is not None:
                    env[name] = value
        env.update(self.settings.extra_env)
        env["HOSTNAME"] = self.view.name
        if self.settings.admin_token:
            env["FORESCALE_ADMIN_TOKEN"] = self.settings.admin_token
        return rewrite_paths(env, self._mounted)

    async def _read_secret(self, name: str) -> dict | None:
        try:
            return await self.api.get(object_path("v1", "secrets", self.view.namespace, name))
        except (KubeApiError, aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise VolumeNotReady(f"cannot read secret {name!r}: {exc}") from None

    async def _mount_volumes(self) -> bool:
        """Write the secret volumes for this start; False (pod left ContainerCreating) while a Secret is missing."""
        if self._volume_root is None:
            self._volume_root = tempfile.mkdtemp(prefix=f"forescale-pod-{self.view.name}-")
        try:
            self._mounted = await mount_secrets(self.template.get("spec") or {}, self._read_secret, Path(self._volume_root))
        except VolumeNotReady as exc:
            if str(exc) != self._volume_problem:  # said once per problem, as the kubelet's FailedMount event
                log.warning("pod %s/%s: %s", self.view.namespace, self.view.name, exc)
                self._volume_problem = str(exc)
            await self._report(waiting_reason="ContainerCreating")
            return False
        self._volume_problem = None
        return True

    async def _value_from(self, source: dict) -> str | None:
        """Resolve the `valueFrom` forms a serving pod uses; others are logged and left unset."""
        field_path = (source.get("fieldRef") or {}).get("fieldPath", "")
        fields = {"metadata.name": self.view.name, "metadata.namespace": self.view.namespace,
                  "status.podIP": "127.0.0.1", "status.hostIP": "127.0.0.1", "spec.nodeName": "local"}
        if field_path in fields:
            return fields[field_path]
        if field_path.startswith("metadata.labels['") and field_path.endswith("']"):
            return self.view.labels.get(field_path[len("metadata.labels['"):-2])
        ref = source.get("secretKeyRef")
        if ref and ref.get("name") and ref.get("key"):
            secret = await self.api.get(object_path("v1", "secrets", self.view.namespace, ref["name"])) or {}
            value = secret_files(secret).get(ref["key"])
            if value is not None:
                return value.decode()
        log.warning("pod %s: env source %s not resolved locally; left unset", self.view.name, source)
        return None

    def argv(self) -> list[str]:
        """The command line, with the template's fields filled in."""
        fields = {"python": sys.executable, "port": self.view.port, "precision": self.precision(),
                  "pod": self.view.name, "namespace": self.view.namespace, "deployment": self.view.deployment}
        return [part.format(**fields) for part in self.settings.command]

    # -- lifecycle ----------------------------------------------------------
    async def start(self) -> None:
        """Create the Pod object and start its lifecycle in the background."""
        await self.api.create(collection_path("v1", "pods", self.view.namespace), self.manifest())
        self._task = asyncio.create_task(self._lifecycle(), name=f"pod {self.view.name}")
        await self._report()

    async def _lifecycle(self) -> None:
        # The back-off resets after a long run; restartCount never does (as in a kubelet): clients such as
        # the operator tell a restarted container from the old one by it.
        failures = 0
        while not self._stopping:
            if not await self._mount_volumes():
                await asyncio.sleep(VOLUME_RETRY_SECONDS)
                continue
            started = time.monotonic()
            exit_code = await self._run_once()
            if self._stopping:
                return
            ran = time.monotonic() - started
            if ran >= self.settings.backoff_reset_seconds:
                failures = 0
            failures += 1
            self.view.restarts += 1
            delay = min(self.settings.backoff_cap_seconds,
                        self.settings.backoff_base_seconds * 2 ** (failures - 1))
            log.warning("pod %s/%s: process exited with %s after %.1f s; restarting in %.1f s",
                        self.view.namespace, self.view.name, exit_code, ran, delay)
            await self._report(waiting_reason="CrashLoopBackOff")
            await asyncio.sleep(delay)

    async def _run_once(self) -> int | None:
        """Run the process once: start, become ready, stay probed; return its exit code."""
        log_path = None
        if self.settings.log_dir:
            os.makedirs(self.settings.log_dir, exist_ok=True)
            log_path = os.path.join(self.settings.log_dir, f"{self.view.namespace}_{self.view.name}.log")
        try:
            self._proc = await procs.aspawn(self.argv(), env=await self.environment(), log_path=log_path)
        except OSError as exc:
            log.warning("pod %s: cannot start %s: %s", self.view.name, self.argv()[0], exc)
            return None
        self.view.pid, self.view.running = self._proc.pid, True
        await self._report()
        prober = asyncio.create_task(self._probe())
        try:
            return await self._proc.wait()
        finally:
            prober.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await prober
            self.view.running, self.view.ready, self.view.pid = False, False, None

    async def _probe(self) -> None:
        """Start-up delay, then readiness until first success, then periodic probing."""
        await asyncio.sleep(self.settings.startup_delay_seconds)
        url = self.view.url + self.settings.readiness_path
        timeout = aiohttp.ClientTimeout(total=2.0)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            deadline = time.monotonic() + self.settings.ready_timeout_seconds
            while not await _probe_once(session, url):
                if time.monotonic() > deadline:
                    log.warning("pod %s: %s not ready after %.0f s; killing it", self.view.name, url,
                                self.settings.ready_timeout_seconds)
                    if self._proc is not None:
                        await procs.astop_process(self._proc, self.settings.stop_grace_seconds)
                    return
                await asyncio.sleep(0.2)
            if self._on_ready is not None:
                # Before the pod is reported Ready, so nobody routes to it first
                # (the demo re-applies an ongoing incident to new pods here).
                try:
                    await self._on_ready(self.view)
                except Exception as exc:  # noqa: BLE001 - a hook's failure must not kill the pod
                    log.warning("pod %s: on_ready hook failed: %s", self.view.name, exc)
            self.view.ready = True
            await self._report()
            failures = 0
            while True:
                await asyncio.sleep(self.settings.probe_period_seconds)
                failures = 0 if await _probe_once(session, url) else failures + 1
                ready = failures < self.settings.probe_failure_threshold
                if ready != self.view.ready:
                    self.view.ready = ready
                    await self._report()

    async def stop(self, *, delete: bool = True, drain: bool = True) -> None:
        """Take the pod out of service, delete its object (when asked) and stop its process.

        With `drain`, the process keeps serving for `drain_seconds` after its
        object is gone, so that routers polling the API stop sending to it
        before it stops answering (what a preStop sleep does in a cluster).
        """
        self._stopping = True
        self.view.ready = False
        self._on_change()
        if self._task is not None:
            # No more probing or restarting; the process itself is left running for now.
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if delete:
            # Delete first so that nobody routes to a pod that is going away.
            with contextlib.suppress(KubeApiError, aiohttp.ClientError, asyncio.TimeoutError):
                await self.api.delete(self.path)
        if self._proc is not None and self._proc.returncode is None:
            if drain and self.settings.drain_seconds > 0:
                await asyncio.sleep(self.settings.drain_seconds)
            await procs.astop_process(self._proc, self.settings.stop_grace_seconds)
        self.view.running, self.view.pid = False, None
        if self._volume_root is not None:
            shutil.rmtree(self._volume_root, ignore_errors=True)
            self._volume_root = None


async def _probe_once(session: aiohttp.ClientSession, url: str) -> bool:
    try:
        async with session.get(url) as resp:
            return 200 <= resp.status < 400
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
        return False
