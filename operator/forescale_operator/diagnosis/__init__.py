"""Root cause, not just relief: the diagnosis checklist (issue 17, first half).

Pure, like the decision engine: plain numbers in (`Evidence`), a ranked
`Diagnosis` out (`diagnose`). `gather_evidence` fills an `Evidence` through
an injected `PromQuery`, so this package imports neither kopf, kubernetes,
aiohttp nor a Prometheus client (import-linter contract `engine-pure`).
See docs/diagnosis.md. `forescale diagnose` runs it on demand, and the operator
at every incident (act/incident_diagnosis.py), where `plan_remedy`
says what it does about the top cause.
"""

from .evidence import Evidence
from .gather import ClosablePromQuery, KubeFacts, PromQuery, Windows, gather_evidence
from .rank import LOOK_AGAIN, Diagnosis, diagnose, looks_again, second_look_names
from .remedy import DELETE_POD, NOTHING, Remedy, plan_remedy
from .rules import CAUSES, CLEAR, RULES, SUSPECTED, UNKNOWN, Finding, Rule

__all__ = ["CAUSES", "CLEAR", "DELETE_POD", "LOOK_AGAIN", "NOTHING", "RULES", "SUSPECTED", "UNKNOWN", "ClosablePromQuery", "Diagnosis",
           "Evidence", "Finding", "KubeFacts", "PromQuery", "Remedy", "Rule", "Windows", "diagnose", "gather_evidence",
           "looks_again", "plan_remedy", "second_look_names"]
