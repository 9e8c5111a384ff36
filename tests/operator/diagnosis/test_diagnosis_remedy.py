"""What the operator does about the top cause (diagnosis/remedy.py): a table of diagnoses, pods and guards."""

from __future__ import annotations

from dataclasses import replace

import pytest
from diagnosis_cases import CAUSE_EVIDENCE, CONTROL

from forescale_operator.diagnosis import DELETE_POD, NOTHING, Evidence, diagnose, plan_remedy
from forescale_operator.diagnosis.remedy import MIN_READY_TO_DELETE

BAD = "chat-a-3"  # the slow pod of CAUSE_EVIDENCE["bad-pod"]
ALL_READY = {"chat-a-1": True, "chat-a-2": True, BAD: True, "chat-a-4": True}


def _plan(evidence: Evidence, pods=ALL_READY, **kw):
    return plan_remedy(diagnose(evidence), evidence, pods, deployment="chat-a", namespace="ml", **kw)


@pytest.mark.parametrize("case, pods, acted, action, note", [
    # one bad pod, the pool ready: delete it
    ("bad-pod", ALL_READY, False, DELETE_POD, "Deleting pod chat-a-3 so that Deployment chat-a replaces it"),
    # two pods ready, the bad one counted: one still serves while the other is replaced
    ("bad-pod", {"chat-a-1": True, BAD: True}, False, DELETE_POD, "Deleting pod chat-a-3"),
    # fewer than two ready: never
    ("bad-pod", {"chat-a-1": False, BAD: True}, False, NOTHING, "1 of 2 pods of chat-a ready; it takes 2"),
    ("bad-pod", {BAD: True}, False, NOTHING, "1 of 1 pods of chat-a ready"),
    # once per incident
    ("bad-pod", ALL_READY, True, NOTHING, "a pod was deleted in this incident already"),
    # the pod is gone since the evidence was read: not looked for under another name
    ("bad-pod", {"chat-a-1": True, "chat-a-2": True, "chat-a-9": True}, False, NOTHING, "it is gone already"),
    # the pods could not be read
    ("bad-pod", None, False, NOTHING, "the pool's pods could not be read"),
    # a rollout: say so, do nothing more
    ("rollout", ALL_READY, False, NOTHING, "Not rolled back: that is the user's call (kubectl rollout undo deployment/chat-a -n ml)"),
    # the other causes: the playbook is the answer
    ("overload", ALL_READY, False, NOTHING, ""),
    ("degraded-pods", ALL_READY, False, NOTHING, ""),
    ("cache-failure", ALL_READY, False, NOTHING, ""),
    ("memory-pressure", ALL_READY, False, NOTHING, ""),
    ("request-mix", ALL_READY, False, NOTHING, ""),
    ("control", ALL_READY, False, NOTHING, ""),
])
def test_the_remedy_table(case, pods, acted, action, note):
    evidence = CONTROL if case == "control" else CAUSE_EVIDENCE[case]
    remedy = _plan(evidence, pods, acted=acted)
    assert remedy.action == action
    assert note in remedy.note if note else remedy.note == ""
    if action == DELETE_POD:
        assert remedy.pod == BAD
        assert remedy.message is not None and remedy.message.startswith(f"Delete pod {BAD} so that Deployment chat-a")
        others = len(pods) - 1
        assert f"p99 600 ms vs 122 ms median of the other 3 (4.9x); {len(pods)} of {len(pods)} pods of chat-a ready" \
            in remedy.message if others == 3 else "p99 600 ms vs" in remedy.message
    else:
        assert remedy.message is None


def test_the_threshold_is_the_issues_two_pods():
    assert MIN_READY_TO_DELETE == 2


@pytest.mark.parametrize("pod_p99", [None, {}, {BAD: 600.0}, {BAD: float("nan"), "chat-a-1": 100.0}, "garbage"])
def test_evidence_without_a_slowest_pod_deletes_nothing_and_never_raises(pod_p99):
    diagnosis = diagnose(CAUSE_EVIDENCE["bad-pod"])  # suspects bad-pod on the real evidence
    evidence = replace(CAUSE_EVIDENCE["bad-pod"], pod_p99_ms=pod_p99)
    remedy = plan_remedy(diagnosis, evidence, ALL_READY, deployment="chat-a", namespace="ml")
    assert remedy.action == NOTHING and "names no slowest pod" in remedy.note


def test_the_note_follows_the_top_causes_numbers_in_the_message():
    found = diagnose(CAUSE_EVIDENCE["rollout"])
    remedy = _plan(CAUSE_EVIDENCE["rollout"])
    message = found.message_with(remedy.note)
    assert message.startswith("Rollout suspected (rollout): new revision 4 min ago. Not rolled back")
    assert diagnose(CONTROL).message_with("anything") is None
