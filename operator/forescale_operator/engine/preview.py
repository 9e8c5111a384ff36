"""Rule 5: Preview computes everything and acts on nothing.

The returned Decision carries what the operator may apply in Preview: the
children at their minimums, weights 100/0, the template precision, and
no actions. What Auto would do is kept in `Decision.would`; every event message
and the summary start with `Preview: would`.
"""

from __future__ import annotations

from dataclasses import replace

from forescale_operator.spec import InferenceSpec

from .types import Decision, EngineParams, Event

PREFIX = "Preview: would "


def would(message: str) -> str:
    """`Shift 30% to chat-b: ...` -> `Preview: would shift 30% to chat-b: ...`."""
    return PREFIX + message[:1].lower() + message[1:]


def wrap(spec: InferenceSpec, decision: Decision, params: EngineParams) -> Decision:
    """The Decision itself in Auto; its inert preview form in Preview."""
    if not spec.preview:
        return decision
    return replace(
        decision,
        desired_replicas={"a": spec.a.min_replicas, "b": spec.b.min_replicas},
        weights={"a": 100, "b": 0},
        runtime_precision={"a": spec.a.precision, "b": spec.b.precision},
        actions=(),
        events=tuple(Event(e.reason, would(e.message)) for e in decision.events),
        summary=would("be " + decision.summary),
        preview=True,
        would=decision,
    )
