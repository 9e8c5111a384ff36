"""One coordination Lease per watched namespace, shared by every operator whatever its scope (issue 19, defect 9).

kopf's peering keeps the replicas of *one* install apart, but an `-A` operator
peers in a ClusterKopfPeering and an `-n default` one in a KopfPeering: they
never see each other, and both acted on the same resources. Every operator
therefore also takes the Lease `forescale-operator` (coordination.k8s.io/v1)
in the namespace of each resource it serves, and acts on a resource only while
it holds that namespace's Lease. The one that does not hold it stands by: its
handlers and loop do nothing there (no writes, no events), and it takes over
when the holder's Lease expires or is released.

Why one Lease per namespace, not one per resource nor one cluster-wide:
- A scope *is* a set of namespaces, so two operators contend exactly on the
  namespaces they both watch. A per-namespace Lease never idles an operator on
  namespaces nobody else watches (a cluster-wide Lease would: `-n team-a` and
  `-n team-b` are both legitimate and must both act).
- Both operators can reach it without being told where: it lives beside the
  resources. controller-runtime (and so KEDA) keeps its leader-election Lease in
  the operator's own namespace, which two installs of different scopes need
  not share (`-A` in `forescale`, `-n default` in `default`).
- It costs one renewal per namespace, not per resource: 1,000 resources in 40
  namespaces renew 40 Leases, 8 writes/s at the default period, against 200/s
  for per-resource Leases.

The protocol is client-go's leader election (the one controller-runtime uses):
- the holder renews every `renew_s` (the record's `renewTime`), and treats
  itself as the holder only for `deadline_s` (2/3 of the duration) after the
  last renewal it *sent*, so it stops acting before anyone may take over;
- a candidate takes the Lease when it is free (no holder: released on a clean
  exit), its own (a restarted container of the same pod), or unchanged for the
  record's `leaseDurationSeconds` as measured on the candidate's own monotonic
  clock from when it first saw that version. Clock skew between machines and
  wall-clock jumps do not matter; `renewTime` is written for people only;
- every write is an update with the resourceVersion read (409 on a race): two
  candidates can never both win one expiry.

Defaults (FORESCALE_LEASE_SECONDS, FORESCALE_LEASE_RENEW_SECONDS) and why:
- duration 30 s (controller-runtime: 15 s). A crashed holder blocks its
  namespaces for at most 30 s + one period: two ticks at the default 15 s step,
  while kopf's own peering already waits 60 s for a dead replica. Longer than
  15 s because ticks here run for seconds (Prometheus, admin calls), and a
  holder must not lose its Lease in the middle of a slow one;
- renew every 5 s (controller-runtime retries every 2 s). Inside the 20 s
  deadline that is four tries: three renewals in a row may fail (a 429, an API
  server restart) before the holder stands down. Candidates retry at the same
  period, so a released Lease is taken within 5 s;
- a clean exit releases every Lease held, so a restart or a rollout hands over
  within one period instead of a whole duration.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .kube.client import KubeApi
from .kube.errors import ApiError
from .kube.refs import LEASES

logger = logging.getLogger("forescale.operator.leases")

#: the Lease's name in every namespace: the same for every install and scope, so that all of them meet there
LEASE_NAME = "forescale-operator"


@dataclass(frozen=True)
class LeaseTiming:
    """How long a Lease lasts and how often it is renewed (see the module docstring for the defaults)."""

    #: leaseDurationSeconds written into the Lease: how long an unrenewed Lease blocks the others
    duration_s: int = 30
    #: the holder renews, and candidates retry, this often
    renew_s: float = 5.0

    @property
    def deadline_s(self) -> float:
        """How long after its last renewal sent the holder still acts (client-go's RenewDeadline: 2/3)."""
        return self.duration_s * 2.0 / 3.0


def micro_time(seconds: float) -> str:
    """A Kubernetes MicroTime (RFC 3339 with microseconds), as Lease's acquireTime and renewTime are written."""
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Seen:
    """The last version of a Lease seen, and when (monotonic) it was first seen: the expiry clock."""

    version: str
    since: float


class NamespaceLeases:
    """Takes, renews and releases the Lease of every namespace the operator's resources are in.

    `want(ns)` / `drop(ns)` count the resources of a namespace (each resource's loop calls them);
    `holds(ns)` says whether this operator may act there now; `run()` is the background task;
    `release_all()` hands every Lease back on a clean exit.
    """

    def __init__(self, api: KubeApi, identity: str, timing: LeaseTiming = LeaseTiming(), *,
                 monotonic: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time,
                 name: str = LEASE_NAME) -> None:
        if not identity:
            raise ValueError("a Lease holder needs a non-empty identity")
        self.api, self.identity, self.timing, self.name = api, identity, timing, name
        self._monotonic, self._wall = monotonic, wall
        self._wanted: Counter[str] = Counter()
        #: namespace -> monotonic time the last successful renewal was sent
        self._renewed: dict[str, float] = {}
        #: namespace -> the Lease as last written by us (renewals skip the read)
        self._ours: dict[str, dict[str, Any]] = {}
        self._seen: dict[str, _Seen] = {}
        #: namespace -> monotonic time of the last attempt: each namespace is tried at most once a period
        self._tried: dict[str, float] = {}
        self._holder_logged: dict[str, str] = {}
        self._wake = asyncio.Event()
        self._closing = False

    # --- what the handlers ask ----------------------------------------------

    def want(self, namespace: str) -> None:
        """One more resource in this namespace: contend for its Lease (tried at once)."""
        self._wanted[namespace] += 1
        self._wake.set()

    def drop(self, namespace: str) -> None:
        """One resource fewer; with none left the Lease is released on the next round."""
        if self._wanted[namespace] > 1:
            self._wanted[namespace] -= 1
        else:
            self._wanted.pop(namespace, None)
            self._wake.set()

    def drop_later(self, namespace: str, seconds: float) -> None:
        """`drop()` after a while (a deleted resource's delete handler may still need the Lease)."""
        asyncio.get_running_loop().call_later(seconds, self.drop, namespace)

    def holds(self, namespace: str) -> bool:
        """Whether this operator may act in the namespace now: it renewed the Lease within the deadline."""
        renewed = self._renewed.get(namespace)
        return renewed is not None and self._monotonic() - renewed < self.timing.deadline_s

    def holder(self, namespace: str) -> str:
        """Who holds the namespace's Lease as last seen ('' when free or unknown)."""
        return self._holder_logged.get(namespace, "")

    # --- the background task -------------------------------------------------

    async def run(self) -> None:
        """Until close(): a round at once when a namespace is wanted, else one every `renew_s`."""
        while not self._closing:
            self._wake.clear()
            try:
                await self.step()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a dead task would leave every namespace standing by, silently
                # An answer the client does not map to ApiError (a broken payload, a bug) must cost one round,
                # not the task: without it no Lease is ever taken or renewed again and the operator acts nowhere.
                logger.exception("A Lease round failed; the next in %gs.", self.timing.renew_s)
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self.timing.renew_s)
            except asyncio.TimeoutError:
                pass

    async def close(self, task: asyncio.Task | None) -> None:
        """A clean exit: let `run()` finish its round (never cut a write short), then release every Lease."""
        self._closing = True
        self._wake.set()
        if task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(task), timeout=10)
            except asyncio.TimeoutError:
                task.cancel()
            except Exception as exc:  # noqa: BLE001 - the task's own failure must not stop the release
                logger.warning("The Lease task ended with %r.", exc)
        await self.release_all()

    async def step(self) -> None:
        """One round: release the Leases no longer wanted, renew or try to take the wanted ones."""
        for namespace in [ns for ns in self._ours if ns not in self._wanted]:
            self._tried.pop(namespace, None)
            try:
                await self._release(namespace)
            except ApiError as exc:
                logger.warning("Could not release the Lease %s/%s: %s; it expires in %ds.", namespace, self.name, exc,
                               self.timing.duration_s)
        due = []
        for namespace in list(self._wanted):
            tried = self._tried.get(namespace)
            if tried is not None and self._monotonic() - tried < self.timing.renew_s * 0.9:
                continue  # tried this period already: a round woken early by want() is for new namespaces only
            self._tried[namespace] = self._monotonic()
            due.append(namespace)
        # All at once, not one after another: a namespace is renewed every round's length + renew_s, and with
        # 5 namespaces in a row an API answering in 3 s or more makes that longer than the 20 s deadline
        # (at 1,000 resources the operator kept losing Leases it was renewing: docs/operator-scale.md).
        await asyncio.gather(*(self._renew_one(namespace) for namespace in due))

    async def _renew_one(self, namespace: str) -> None:
        try:
            await self._take_or_renew(namespace)
        except ApiError as exc:
            # Holding on is safe: holds() lapses by itself after the deadline without a renewal.
            hint = " (the operator's RBAC needs get, create and update on leases)" if exc.status == 403 else ""
            logger.warning("Lease %s/%s: %s%s; retrying in %gs.", namespace, self.name, exc, hint,
                           self.timing.renew_s)

    async def release_all(self) -> None:
        """Hand back every Lease held (a clean exit): the other operator takes over within one period."""
        self._wanted.clear()
        for namespace in list(self._ours):
            try:
                await self._release(namespace)
            except ApiError as exc:
                logger.warning("Could not release the Lease %s/%s: %s; it expires in %ds.", namespace, self.name, exc,
                               self.timing.duration_s)

    # --- the protocol --------------------------------------------------------

    async def _take_or_renew(self, namespace: str) -> None:
        ours = self._ours.get(namespace)
        if ours is not None and self.holds(namespace):
            # Renew blind with the version we wrote; a 409 means someone else wrote since: read and decide.
            try:
                await self._write(namespace, ours, acquired=False)
                return
            except ApiError as exc:
                if exc.status != 409:
                    raise
                self._lose(namespace)
        lease = await self.api.get(LEASES, namespace, self.name)
        now = self._monotonic()
        if lease is None:
            try:
                await self._write(namespace, None, acquired=True)
            except ApiError as exc:
                if exc.status != 409:  # 409: another operator created it first; decide on the next round
                    raise
            return
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        version = str((lease.get("metadata") or {}).get("resourceVersion", ""))
        seen = self._seen.get(namespace)
        if seen is None or seen.version != version:
            seen = self._seen[namespace] = _Seen(version, now)
        duration = spec.get("leaseDurationSeconds")
        if isinstance(duration, bool) or not isinstance(duration, int) or duration <= 0:
            duration = self.timing.duration_s
        expired = now - seen.since >= duration
        if holder == self.identity or not holder or expired:
            try:
                await self._write(namespace, lease, acquired=holder != self.identity)
            except ApiError as exc:
                if exc.status != 409:
                    raise
                self._lose(namespace)  # another candidate won this expiry
            return
        self._lose(namespace)
        if self._holder_logged.get(namespace) != holder:
            self._holder_logged[namespace] = holder
            logger.info("Standing by in namespace %s: the Lease %s is held by %r (another Forescale operator); "
                        "taking over if it is not renewed for %ds.", namespace, self.name, holder, duration)

    async def _write(self, namespace: str, lease: Mapping[str, Any] | None, *, acquired: bool) -> None:
        """Create or update the Lease with us as the holder; on success we hold it from when the write was sent."""
        sent, wall = self._monotonic(), self._wall()
        old_spec = dict((lease or {}).get("spec") or {})
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.timing.duration_s,
            "acquireTime": micro_time(wall) if acquired or not old_spec.get("acquireTime") else old_spec["acquireTime"],
            "renewTime": micro_time(wall),
            "leaseTransitions": int(old_spec.get("leaseTransitions") or 0) + (1 if acquired and lease else 0),
        }
        if lease is None:
            body = {"apiVersion": LEASES.api_version, "kind": LEASES.kind,
                    "metadata": {"name": self.name, "namespace": namespace,
                                 "labels": {"app.kubernetes.io/managed-by": "forescale-operator"}},
                    "spec": spec}
            written = await self.api.create(LEASES, namespace, body)
        else:
            body = {**lease, "spec": spec}
            written = await self.api.replace(LEASES, namespace, self.name, body)
        self._renewed[namespace] = sent
        self._ours[namespace] = written
        self._seen[namespace] = _Seen(str((written.get("metadata") or {}).get("resourceVersion", "")), sent)
        if acquired or self._holder_logged.get(namespace) != self.identity:
            self._holder_logged[namespace] = self.identity
            logger.info("Took the Lease %s/%s as %r: acting on the InferenceDeployments of namespace %s.",
                        namespace, self.name, self.identity, namespace)

    def _lose(self, namespace: str) -> None:
        if self._renewed.pop(namespace, None) is not None:
            logger.warning("Lost the Lease %s/%s: standing by in namespace %s.", namespace, self.name, namespace)
        self._ours.pop(namespace, None)

    async def _release(self, namespace: str) -> None:
        """Give the Lease back: no holder, so the next candidate takes it at once. We stop acting first;
        the record is forgotten only once written (release_all() retries one that failed or was cut short)."""
        self._renewed.pop(namespace, None)
        self._holder_logged.pop(namespace, None)
        ours = self._ours.get(namespace)
        if ours is None:
            return
        wall = micro_time(self._wall())
        spec = {**(ours.get("spec") or {}), "holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": wall}
        try:
            await self.api.replace(LEASES, namespace, self.name, {**ours, "spec": spec})
            logger.info("Released the Lease %s/%s.", namespace, self.name)
        except ApiError as exc:
            if exc.status != 409:  # 409: someone wrote it since (took it over); nothing to hand back
                raise
        self._ours.pop(namespace, None)


async def start_leases(api: KubeApi, identity: str, timing: LeaseTiming | None) -> NamespaceLeases | None:
    """The operator's leases, or None when coordination is off (timing None) or the cluster serves no Lease."""
    if timing is None:
        logger.info("FORESCALE_LEASE_SECONDS=0: no coordination Lease; run no other Forescale operator over the "
                    "same namespaces.")
        return None
    if not await api.served(LEASES):
        logger.warning("The cluster serves no coordination.k8s.io/v1 Lease: running without coordination; run no "
                       "other Forescale operator over the same namespaces.")
        return None
    return NamespaceLeases(api, identity, timing)
