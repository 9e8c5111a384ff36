"""Run the checklist over the evidence and rank the causes.

Order: suspected causes first, then unknown, then clear. Among the suspected,
a cause that another suspected cause explains (`Rule.explains`: a rollout
explains cold caches, one bad pod explains a slower pool) ranks after the
causes that are not explained; then the higher score first; then checklist
order. The top cause is the first suspected one, or None: a healthy,
unchanged service has none, and then no `RootCauseSuspected` event is due.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any, Mapping

from .evidence import Evidence
from .rules import CLEAR, RULES, SUSPECTED, UNKNOWN, Finding, Rule, evaluate

#: Kubernetes truncates event messages at 1 KiB; stay under it
MAX_MESSAGE_CHARS = 1000
#: the CRD's bound on a finding's summary in status.diagnosis (crds/: status.diagnosis.findings[].summary)
MAX_SUMMARY_CHARS = 1024
_STATUS_ORDER = {SUSPECTED: 0, UNKNOWN: 1, CLEAR: 2}


@dataclass(frozen=True)
class Diagnosis:
    """The ranked findings, the top cause, and the event's message."""

    findings: tuple[Finding, ...]
    #: the first suspected cause, or None when nothing is suspected
    top: Finding | None
    #: the `RootCauseSuspected` message, or None when nothing is suspected
    message: str | None

    @property
    def suspected(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.status == SUSPECTED)

    def message_with(self, note: str) -> str | None:
        """The event's message with `note` after the top cause's numbers (None when nothing is suspected)."""
        return event_message(list(self.findings), note=note) if note and self.top is not None else self.message

    def to_status(self) -> list[dict[str, Any]]:
        """The ranked list for `status.diagnosis`: one entry per cause."""
        return [f.to_json() for f in self.findings]

    def to_json(self) -> dict[str, Any]:
        """The whole diagnosis, JSON-safe (the CLI's `--json`, the snapshot)."""
        return {"top": self.top.cause if self.top else None, "message": self.message, "findings": self.to_status()}

    def status_field(self, at: float, pool: str | None = None) -> dict[str, Any]:
        """`status.diagnosis` as the CRD holds it: `at` (RFC 3339), `pool`, `top` and `message` (absent when
        nothing is suspected: a merge patch with null would delete them), and the ranked `findings`."""
        when = at if isinstance(at, (int, float)) and math.isfinite(at) else 0.0
        out: dict[str, Any] = {"at": dt.datetime.fromtimestamp(when, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
        if pool is not None:
            out["pool"] = pool
        if self.top is not None:
            out["top"] = self.top.cause
            out["message"] = self.message
        out["findings"] = [{**f, "summary": f["summary"][:MAX_SUMMARY_CHARS]} for f in self.to_status()]
        return out


def diagnose(evidence: Evidence | Mapping[str, Any] | None, rules: tuple[Rule, ...] = RULES) -> Diagnosis:
    """Every rule's finding on `evidence`, ranked. Never raises: evidence that is not an
    `Evidence` is read as JSON (`Evidence.from_json`), and a rule that fails says unknown."""
    if not isinstance(evidence, Evidence):
        evidence = Evidence.from_json(evidence)
    findings = [evaluate(rule, evidence) for rule in rules]
    ranked = rank(findings, rules)
    top = ranked[0] if ranked and ranked[0].status == SUSPECTED else None
    return Diagnosis(tuple(ranked), top, event_message(ranked, rules) if top else None)


def rank(findings: list[Finding], rules: tuple[Rule, ...] = RULES) -> list[Finding]:
    """Suspected (unexplained before explained, then by score), unknown, clear; ties in checklist order."""
    order = {rule.cause: i for i, rule in enumerate(rules)}
    suspected = {f.cause for f in findings if f.status == SUSPECTED}
    explained = {cause for rule in rules if rule.cause in suspected for cause in rule.explains}

    def key(f: Finding) -> tuple:
        return (_STATUS_ORDER.get(f.status, 3), f.cause in explained, -f.score, order.get(f.cause, len(order)))

    return sorted(findings, key=key)


def event_message(ranked: list[Finding], rules: tuple[Rule, ...] = RULES, note: str = "") -> str | None:
    """`Cache failure suspected: kv cache 97% used, ...; hit rate 0.31 (was 0.82). Also suspected: ...`;
    `note` (what the operator does about it, remedy.py) follows the top cause's numbers."""
    suspected = [f for f in ranked if f.status == SUSPECTED]
    if not suspected:
        return None
    titles = {rule.cause: rule.title for rule in rules}
    top = suspected[0]
    text = f"{titles.get(top.cause, top.cause)} suspected ({top.cause}): {top.summary}"
    if note:
        text += f". {note}"
    if len(suspected) > 1:
        text += ". Also suspected: " + ", ".join(f"{f.cause} ({f.summary})" for f in suspected[1:])
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS - 3] + "..."


# -- a second look ------------------------------------------------------------------------------

#: Top causes looked at again one "now" window later. A slower device first shows as a queue: the pods serve
#: fewer items a second, so the load each carries and the queue grow within seconds, while per-item compute
#: still averages the window's healthy seconds with the slow ones. A relief that starts in those seconds
#: (the engine acts within 2-3 ticks) reads an overload; the window after it holds the slowdown alone.
#: Only overload: it is the cause another one (degraded pods) explains and that a slowdown's first seconds show.
LOOK_AGAIN = ("overload",)


def looks_again(first: Diagnosis) -> bool:
    """Whether `first`'s top cause is one a later window may show to be another cause's first sign."""
    return first.top is not None and first.top.cause in LOOK_AGAIN


def second_look_names(first: Diagnosis, second: Diagnosis, rules: tuple[Rule, ...] = RULES) -> bool:
    """Whether the second look names a new top cause: one whose rule explains the first's top (`Rule.explains`).
    A second look that suspects nothing, or the same cause, or one that does not explain the first, changes
    nothing: the relief has moved load and pods since, so a weaker or different reading is no correction."""
    if first.top is None or second.top is None or second.top.cause == first.top.cause:
        return False
    explains = {rule.cause: rule.explains for rule in rules}
    return first.top.cause in explains.get(second.top.cause, ())
