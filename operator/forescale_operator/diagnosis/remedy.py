"""What the operator does about the top cause, where that is safe (issue 17 §4): a table, one row per cause.

| top cause | the operator | why |
|---|---|---|
| `bad-pod` | deletes that pod, so its Deployment replaces it | a pod slower than its siblings on the same image is the pod (a bad GPU, a noisy neighbour, a leak), and a fresh one is the SRE's first move |
| `rollout` | nothing; the event says so | rolling back is the user's call: the new revision may carry a fix the user needs |
| anything else | nothing more than the playbook | more pods, B's reserve and int8 are already the answer |

The deletion is guarded:
- at most once per incident (`acted`: the caller says whether it deleted a
  pod of this resource in the last `ONCE_PER_SECONDS`);
- never while fewer than `MIN_READY_TO_DELETE` pods of the pool are ready,
  the bad one counted: one pod keeps serving while the replacement starts
  (and B already took its emergency share);
- only a pod that still exists: a pod gone since the evidence was read is
  not looked for under another name.

Pure: the pods are given as names with their readiness, the evidence as the
diagnosis read it. `plan_remedy` never raises.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Mapping

from .evidence import Evidence
from .rank import Diagnosis
from .rules import fmt

DELETE_POD, NOTHING = "delete-pod", "none"

#: the pool's ready pods, the bad one counted, below which no pod is deleted (the issue's "two pods of A")
MIN_READY_TO_DELETE = 2
#: "once per incident": no second deletion for the same resource within this many seconds. An incident's
#: relief, recovery and stepped cut-back take minutes (the demo's: about 3); 15 minutes covers one incident
#: with room, and is the window in which the rollout rule still blames a rollout
ONCE_PER_SECONDS = 900.0


@dataclass(frozen=True)
class Remedy:
    """The action to take (`DELETE_POD` or `NOTHING`), on which pod, and what to tell the SRE."""

    action: str = NOTHING
    pod: str | None = None
    #: added to the RootCauseSuspected message: what the operator does next, or why it does not
    note: str = ""
    #: the message of the action's own event (None when there is no action)
    message: str | None = None


def plan_remedy(diagnosis: Diagnosis, evidence: Evidence | None, pods: Mapping[str, bool] | None, *,
                deployment: str, namespace: str, acted: bool = False) -> Remedy:
    """The remedy for `diagnosis`'s top cause. `pods`: the pool's pods now, name -> ready (None: unknown)."""
    top = diagnosis.top.cause if diagnosis.top is not None else None
    if top == "rollout":
        return Remedy(note=f"Not rolled back: that is the user's call "
                           f"(kubectl rollout undo deployment/{deployment} -n {namespace})")
    if top != "bad-pod":
        return Remedy()
    outlier = _outlier(evidence)
    if outlier is None:
        return Remedy(note="No pod deleted: the evidence names no slowest pod")
    pod, worst_ms, median_ms, others = outlier
    if acted:
        return Remedy(pod=pod, note=f"Pod {pod} not deleted: a pod was deleted in this incident already")
    if pods is None:
        return Remedy(pod=pod, note=f"Pod {pod} not deleted: the pool's pods could not be read")
    if pod not in pods:
        return Remedy(pod=pod, note=f"Pod {pod} not deleted: it is gone already")
    ready = sum(1 for r in pods.values() if r is True)
    if ready < MIN_READY_TO_DELETE:
        return Remedy(pod=pod, note=(f"Pod {pod} not deleted: {ready} of {len(pods)} pods of {deployment} ready; "
                                     f"it takes {MIN_READY_TO_DELETE} so that one serves while it is replaced"))
    ratio = worst_ms / median_ms if median_ms > 0 else math.inf
    message = (f"Delete pod {pod} so that Deployment {deployment} replaces it: p99 {fmt(worst_ms)} ms vs "
               f"{fmt(median_ms)} ms median of the other {others} ({ratio:.1f}x); "
               f"{ready} of {len(pods)} pods of {deployment} ready")
    return Remedy(DELETE_POD, pod, f"Deleting pod {pod} so that Deployment {deployment} replaces it", message)


def _outlier(evidence: Evidence | None) -> tuple[str, float, float, int] | None:
    """(slowest pod, its p99, the median p99 of the others, how many others), as the bad-pod rule reads them."""
    raw: Any = getattr(evidence, "pod_p99_ms", None)
    if not isinstance(raw, Mapping):
        return None
    pods = {str(k): float(v) for k, v in raw.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0}
    if len(pods) < 2:
        return None
    ranked = sorted(pods.items(), key=lambda kv: (-kv[1], kv[0]))
    (pod, worst), others = ranked[0], [ms for _, ms in ranked[1:]]
    return pod, worst, statistics.median(others), len(others)
