"""AdminReady: where an adopted pod template gets its admin token, and whether it is the operator's.

Tables over pod templates (admin_wiring.pod_token) and over templates plus the
Secrets of the namespace (admin_readiness.judge); the event is posted once
per finding. No cluster: the Secrets are plain dicts.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from forescale_operator import children
from forescale_operator.actuators.deployments import PoolReadiness
from forescale_operator.observe.admin_readiness import ADMIN_OFF, PoolToken, check, judge, record, report
from forescale_operator.admin_wiring import PodToken, SecretKey, pod_token
from forescale_operator.children import Owner
from forescale_operator.events import RecordingEvents
from forescale_operator.kube.errors import ApiError
from forescale_operator.observe import Observation
from forescale_operator.reasons import ConditionReason
from forescale_operator.spec import PoolSpec, parse_spec
from forescale_operator.status import StatusUpdate

OPERATOR = SecretKey("forescale-admin-token", "token")
OWNER = Owner("embed", "default", "uid-1")
FILE = {"name": "FORESCALE_ADMIN_TOKEN_FILE", "value": "/var/run/forescale/token"}
MOUNT = {"name": "tok", "mountPath": "/var/run/forescale", "readOnly": True}


def template(env=(), mounts=(), volumes=(), name="server") -> dict:
    container = {"name": name, "image": "img", "env": list(env), "volumeMounts": list(mounts)}
    return {"spec": {"containers": [container], "volumes": list(volumes)}}


def secret(value: str | None = "s3cret", key: str = "token") -> dict:
    return {"data": {key: base64.b64encode(value.encode()).decode()} if value is not None else {}}


def secret_volume(name="forescale-admin-token", items=None) -> dict:
    body = {"secretName": name}
    if items is not None:
        body["items"] = items
    return {"name": "tok", "secret": body}


@pytest.mark.parametrize("case, tmpl, expected", [
    ("a secret volume, keys as files", template([FILE], [MOUNT], [secret_volume()]),
     PodToken("server", secret=OPERATOR)),
    ("a secret volume with items", template([FILE], [MOUNT], [secret_volume("mine", [{"key": "t", "path": "token"}])]),
     PodToken("server", secret=SecretKey("mine", "t"))),
    ("a projected volume (what Forescale mounts)",
     template([FILE], [MOUNT], [{"name": "tok", "projected": {"sources": [
         {"secret": {"name": "forescale-admin-token", "items": [{"key": "token", "path": "token"}]}}]}}]),
     PodToken("server", secret=OPERATOR)),
    ("a subPath mount of one key", template([FILE], [{"name": "tok", "mountPath": "/var/run/forescale/token",
                                                      "subPath": "token"}], [secret_volume()]),
     PodToken("server", secret=OPERATOR)),
    ("the deepest mount wins", template([FILE], [{"name": "other", "mountPath": "/var"}, MOUNT],
                                        [{"name": "other", "emptyDir": {}}, secret_volume()]),
     PodToken("server", secret=OPERATOR)),
    ("an env secretKeyRef", template([{"name": "FORESCALE_ADMIN_TOKEN", "valueFrom": {
        "secretKeyRef": {"name": "mine", "key": "t"}}}]), PodToken("server", secret=SecretKey("mine", "t"))),
    ("a literal token", template([{"name": "FORESCALE_ADMIN_TOKEN", "value": "abc"}]), PodToken("server", literal="abc")),
    ("the file wins over the variable, as in the server",
     template([{"name": "FORESCALE_ADMIN_TOKEN", "value": "abc"}, FILE], [MOUNT], [secret_volume()]),
     PodToken("server", secret=OPERATOR)),
])
def test_where_the_token_comes_from(case, tmpl, expected):
    assert pod_token(tmpl) == expected, case


@pytest.mark.parametrize("case, tmpl, problem", [
    ("no token at all", template(), "container server sets neither FORESCALE_ADMIN_TOKEN_FILE nor FORESCALE_ADMIN_TOKEN"),
    ("a file with no volume (crds/examples/full.yaml's old bug)", template([FILE]),
     "sets FORESCALE_ADMIN_TOKEN_FILE=/var/run/forescale/token but mounts no volume at /var/run/forescale"),
    ("a mount of a volume the pod does not define", template([FILE], [MOUNT]),
     "mounts volume tok at /var/run/forescale, which the pod template does not define"),
    ("items that put no key at the file", template([FILE], [MOUNT], [secret_volume("x", [{"key": "k", "path": "other"}])]),
     "volume tok puts no Secret key at token"),
    ("no containers", {"spec": {}}, "container ? sets neither"),
])
def test_templates_whose_pods_have_no_token(case, tmpl, problem):
    token = pod_token(tmpl)
    assert token.problem and problem in token.problem and token.secret is None, case


@pytest.mark.parametrize("tmpl, fragment", [
    (template([FILE], [MOUNT], [{"name": "tok", "csi": {"driver": "secrets-store.csi.k8s.io"}}]), "(csi)"),
    (template([{"name": "FORESCALE_ADMIN_TOKEN", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}]),
     "other than a Secret"),
])
def test_tokens_from_where_forescale_cannot_read_are_not_judged(tmpl, fragment):
    token = pod_token(tmpl)
    assert token.unverifiable and fragment in token.unverifiable and token.problem is None


def test_the_pools_forescale_creates_read_back_as_the_operators_secret():
    pool = PoolSpec("b", 1, 3, "int8", 1.0, {"spec": {"containers": [{"name": "s", "image": "i"}]}})
    wired = children.pod_template(OWNER, pool, ("forescale-admin-token", "token"))
    assert pod_token(wired) == PodToken("s", secret=OPERATOR)


def adopted(tmpl: dict, pool: str = "a") -> PoolToken:
    return PoolToken(pool, pod_token(tmpl), True, "embed")


OURS = PoolToken("b", PodToken("", secret=OPERATOR), False)
WIRED = template([FILE], [MOUNT], [secret_volume()])


@pytest.mark.parametrize("case, pools, secrets, status, reason, fragments", [
    ("both pools hold the operator's token", [adopted(WIRED), OURS], {"forescale-admin-token": secret()},
     True, ConditionReason.TOKEN_WIRED, ["pool a (Deployment embed): reads Secret forescale-admin-token (key token)",
                                         "pool b: mounted by Forescale"]),
    ("an adopted template with no token", [adopted(template()), OURS], {"forescale-admin-token": secret()},
     False, ConditionReason.TOKEN_MISSING, ["pool a (Deployment embed): container server sets neither",
                                            "precision fallback, cache warm-up, debug logging",
                                            "mount Secret forescale-admin-token at /var/run/forescale and set "
                                            "FORESCALE_ADMIN_TOKEN_FILE=/var/run/forescale/token"]),
    ("a token file with no volume", [adopted(template([FILE])), OURS], {"forescale-admin-token": secret()},
     False, ConditionReason.TOKEN_MISSING, ["mounts no volume at /var/run/forescale"]),
    ("a template whose env names a Secret that does not exist",
     [adopted(template([{"name": "FORESCALE_ADMIN_TOKEN", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "t"}}}])),
      OURS], {"forescale-admin-token": secret(), "gone": None},
     False, ConditionReason.TOKEN_SECRET_MISSING, ["Secret gone (key t), which does not exist in default"]),
    ("a Secret without the key", [adopted(template([FILE], [MOUNT], [secret_volume("mine")]))],
     {"forescale-admin-token": secret(), "mine": secret(key="other")},
     False, ConditionReason.TOKEN_SECRET_MISSING, ["Secret mine (key token), which has no usable token"]),
    ("another Secret with another token", [adopted(template([FILE], [MOUNT], [secret_volume("mine")]))],
     {"forescale-admin-token": secret(), "mine": secret("different")},
     False, ConditionReason.TOKEN_MISMATCH, ["reads Secret mine (key token), another token", "401"]),
    ("another Secret with the same token", [adopted(template([FILE], [MOUNT], [secret_volume("mine")]))],
     {"forescale-admin-token": secret(), "mine": secret("s3cret\n")},
     True, ConditionReason.TOKEN_WIRED, ["Secret mine (key token) holds the operator's token"]),
    ("a literal token that differs", [adopted(template([{"name": "FORESCALE_ADMIN_TOKEN", "value": "x"}]))],
     {"forescale-admin-token": secret()}, False, ConditionReason.TOKEN_MISMATCH, ["sets another token"]),
    ("both adopted pools wrong: both named, the first's reason",
     [adopted(template()), adopted(template([FILE]), "b")], {"forescale-admin-token": secret()},
     False, ConditionReason.TOKEN_MISSING, ["pool a (Deployment embed)", "pool b (Deployment embed)"]),
    ("the operator's own Secret is missing", [adopted(WIRED), OURS], {"forescale-admin-token": None},
     False, ConditionReason.TOKEN_SECRET_MISSING, ["Secret forescale-admin-token (key token), is not in namespace "
                                                   "default", "FORESCALE_ADMIN_TOKEN_COPY_FROM"]),
    ("a CSI volume: not judged", [adopted(template([FILE], [MOUNT], [{"name": "tok", "csi": {}}])), OURS],
     {"forescale-admin-token": secret()}, None, ConditionReason.TOKEN_UNVERIFIED, ["not checked"]),
])
def test_the_condition(case, pools, secrets, status, reason, fragments):
    verdict = judge(pools, OPERATOR, secrets, namespace="default")
    assert (verdict.status, verdict.reason) == (status, reason), (case, verdict)
    for fragment in fragments:
        assert fragment in verdict.message, (case, verdict.message)
    assert "s3cret" not in verdict.message and "different" not in verdict.message  # values are never shown


def test_no_operator_token_means_admin_calls_are_off_not_a_pod_failure():
    verdict = judge([adopted(template())], None, {}, namespace="default")
    assert verdict == ADMIN_OFF and verdict.status is False and not verdict.warns
    assert "the pods are not at fault" in verdict.message and "FORESCALE_ADMIN_TOKEN_SECRET" in verdict.message


def test_in_read_only_preview_the_copy_still_to_come_counts_as_wired():
    verdict = judge([adopted(WIRED), OURS], OPERATOR, {"forescale-admin-token": None}, namespace="default",
                    copy_from="forescale-system")
    assert verdict.status is True and "copied into default from forescale-system" in verdict.message
    other = judge([adopted(template([FILE], [MOUNT], [secret_volume("mine")]))], OPERATOR,
                  {"forescale-admin-token": None, "mine": secret()}, namespace="default", copy_from="forescale-system")
    assert other.status is None and other.reason is ConditionReason.TOKEN_UNVERIFIED


def condition(verdict) -> dict:
    return {"conditions": [{"type": "AdminReady", "status": {True: "True", False: "False", None: "Unknown"}[
        verdict.status], "reason": verdict.reason.value, "message": verdict.message}]}


async def test_one_warning_when_it_turns_false_and_again_only_for_another_finding():
    events = RecordingEvents()
    missing = judge([adopted(template())], OPERATOR, {"forescale-admin-token": secret()}, namespace="default")
    unmounted = judge([adopted(template([FILE]))], OPERATOR, {"forescale-admin-token": secret()}, namespace="default")
    wired = judge([adopted(WIRED)], OPERATOR, {"forescale-admin-token": secret()}, namespace="default")
    posted = [
        await report(events, {}, missing, OWNER),                   # turns False: one Warning
        await report(events, condition(missing), missing, OWNER),   # the next ticks: nothing
        await report(events, condition(missing), unmounted, OWNER),  # another finding: said once
        await report(events, condition(unmounted), wired, OWNER),    # fixed: no event
        await report(events, condition(wired), ADMIN_OFF, OWNER),    # switched off: not a Warning
    ]
    # what it posted, the tick writes to status on the same tick (the finding in status is what keeps it once)
    assert posted == [True, False, True, False, False]
    assert [(t, r) for t, r, _ in events.events] == [("Warning", "AdminTokenMissing")] * 2
    assert [m for _, _, m in events.events] == [missing.message, unmounted.message]


class FakeSecrets:
    """A KubeApi with only `get`, for Secrets: a dict of bodies, or an ApiError to raise; counts the calls."""

    def __init__(self, secrets: dict, error: Exception | None = None) -> None:
        self.secrets, self.error, self.calls = secrets, error, []

    async def get(self, ref, namespace, name):
        self.calls.append((ref.plural, namespace, name))
        if self.error is not None:
            raise self.error
        return self.secrets.get(name)


def adopt_case(mode: str = "Auto"):
    """The adopt example's spec, and an observation whose pool A (the targetRef) has the example's template."""
    path = Path(__file__).resolve().parents[3] / "crds" / "examples" / "adopt.yaml"
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    resource = next(d for d in docs if d["kind"] == "InferenceDeployment")
    resource["spec"]["mode"] = mode
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    seen = Observation(PoolReadiness(True, name="embed", template=deployment["spec"]["template"]),
                       PoolReadiness(True, name="embed-b"), None)
    return parse_spec(resource["spec"]), seen


@pytest.mark.parametrize("case, secret_ref, api, status, reason, calls", [
    ("no operator token: no call at all", None, FakeSecrets({}), False, ConditionReason.ADMIN_CALLS_OFF, 0),
    ("the example's Deployment has no token", ("forescale-admin-token", "token"),
     FakeSecrets({"forescale-admin-token": secret()}), False, ConditionReason.TOKEN_MISSING, 1),
    ("Secrets forbidden by RBAC: not judged", ("forescale-admin-token", "token"),
     FakeSecrets({}, error=ApiError(403, "Forbidden", "no")), None, ConditionReason.TOKEN_UNVERIFIED, 1),
])
async def test_check_reads_the_secrets_and_judges(case, secret_ref, api, status, reason, calls):
    spec, seen = adopt_case()
    verdict = await check(api, OWNER, spec, seen, secret_ref)
    assert (verdict.status, verdict.reason) == (status, reason), (case, verdict)
    assert len(api.calls) == calls and all(c[:2] == ("secrets", "default") for c in api.calls)


async def test_an_api_server_that_cannot_answer_leaves_the_condition_as_it_was():
    spec, seen = adopt_case()
    verdict = await check(FakeSecrets({}, error=ApiError(503, "Unavailable", "later")), OWNER, spec, seen,
                          ("forescale-admin-token", "token"))
    assert verdict is None
    before = {"conditions": [{"type": "AdminReady", "status": "False", "reason": "TokenMissing", "message": "m",
                              "lastTransitionTime": "2020-01-01T00:00:00Z"}]}
    update = StatusUpdate(before)
    record(update, verdict)
    events = RecordingEvents()
    await report(events, before, verdict, OWNER)
    admin = next(c for c in update.patch.get("conditions", before["conditions"]) if c["type"] == "AdminReady")
    assert (admin["status"], admin["message"]) == ("False", "m") and events.events == []
