"""The AdminReady condition: can the playbook's admin calls authenticate on both pools' pods?

The operator sends the token of FORESCALE_ADMIN_TOKEN_SECRET (read in the
resource's namespace). The pools it creates mount that Secret by construction;
an adopted Deployment (`targetRef`) has whatever its template says
(admin_wiring.py). Here the Secrets those templates name are read and their
tokens compared with the operator's, so the condition can tell "no token",
"a file with no volume", "a Secret that does not exist" and "another token"
apart. Values are compared, never logged or written anywhere.

Why a condition and one Warning event: without the token the playbook still
scales and shifts traffic, but its precision fallback, cache warm-up and debug
logging fail on that pool, which an SRE would otherwise learn only mid-incident.
The event is posted when the condition turns False (or its finding changes),
read from status, so neither a tick nor an operator restart repeats it.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..admin_wiring import ENV_FILE, PodToken, SecretKey, pod_token, usable_token
from ..children import ADMIN_TOKEN_DIR, Owner
from ..events import EventSink
from ..kube.client import KubeApi
from ..kube.errors import ApiError
from ..kube.refs import SECRETS
from ..reasons import ConditionReason, ConditionType, Reason
from ..spec import InferenceSpec
from ..status import StatusUpdate
from .seen import Observation

logger = logging.getLogger(__name__)

#: the end of every AdminReady=False message about the pods: what fails, and the fix
_CONSEQUENCE = ("the playbook's admin calls (precision fallback, cache warm-up, debug logging) to that pool fail "
                "until its pods have the operator's token: mount Secret {name} at " + ADMIN_TOKEN_DIR + " and set " +
                ENV_FILE + "=" + ADMIN_TOKEN_DIR + "/{key} (docs/migrate.md)")


@dataclass(frozen=True)
class AdminVerdict:
    """The AdminReady condition to write: `status` True, False or None (Unknown), a reason and a message."""

    status: bool | None
    reason: ConditionReason
    message: str

    @property
    def warns(self) -> bool:
        """A finding about the pods or Secrets, said as a Warning event; admin calls switched off is not one."""
        return self.status is False and self.reason is not ConditionReason.ADMIN_CALLS_OFF


@dataclass(frozen=True)
class PoolToken:
    """One pool's token source: `adopted` pools read theirs from their Deployment's template."""

    pool: str
    token: PodToken
    adopted: bool
    deployment: str = ""


def secret_token(secret: Mapping[str, Any] | None, key: str) -> str | None:
    """The usable token under `key` of a Secret body (data, base64; or stringData), or None."""
    if secret is None:
        return None
    raw = (secret.get("data") or {}).get(key)
    if raw is not None:
        try:
            return usable_token(base64.b64decode(raw).decode())
        except (ValueError, UnicodeDecodeError):
            return None
    text = (secret.get("stringData") or {}).get(key)
    return usable_token(text) if isinstance(text, str) else None


ADMIN_OFF = AdminVerdict(False, ConditionReason.ADMIN_CALLS_OFF, (
    "Admin calls are off: the operator has no admin token (FORESCALE_ADMIN_TOKEN_SECRET is not set; the chart sets "
    "it unless operator.adminTokenSecret.create is false). Precision fallback, cache warm-up and debug logging are "
    "skipped; the pods are not at fault"))


def _where(entry: PoolToken) -> str:
    return f"pool {entry.pool} (Deployment {entry.deployment})" if entry.adopted else f"pool {entry.pool}"


def _finding(entry: PoolToken, operator: SecretKey, expected: str | None, secrets: Mapping[str, Mapping | None],
             namespace: str, copy_from: str | None) -> tuple[ConditionReason | None, str]:
    """(None, how it is wired) when the pool's pods hold the operator's token; else (reason, what is missing)."""
    token, where = entry.token, _where(entry)
    if token.problem:
        return ConditionReason.TOKEN_MISSING, f"{where}: {token.problem}"
    if token.unverifiable:
        return ConditionReason.TOKEN_UNVERIFIED, f"{where}: {token.unverifiable}; its token is not checked"
    if token.secret == operator:
        if expected is None and copy_from:
            return None, (f"{where} reads {operator.describe()}, copied into {namespace} from {copy_from} when the "
                          f"resource leaves Preview")
        return None, f"{where}: {'mounted by Forescale' if not entry.adopted else 'reads ' + operator.describe()}"
    if expected is None:
        return ConditionReason.TOKEN_UNVERIFIED, (f"{where} reads its token from "
                                                  f"{token.secret.describe() if token.secret else 'the template'}, "
                                                  f"not compared until {operator.describe()} is copied into {namespace}")
    if token.literal is not None:
        if usable_token(token.literal) == expected:
            return None, f"{where}: container {token.container} sets the operator's token in its template"
        return ConditionReason.TOKEN_MISMATCH, (f"{where}: container {token.container} sets another token than the "
                                                f"operator's {operator.describe()}: admin calls would get 401")
    assert token.secret is not None
    secret = secrets.get(token.secret.name)
    if secret is None:
        return ConditionReason.TOKEN_SECRET_MISSING, (
            f"{where}: container {token.container} reads its token from {token.secret.describe()}, which does not "
            f"exist in {namespace}: its pods cannot start")
    value = secret_token(secret, token.secret.key)
    if value is None:
        return ConditionReason.TOKEN_SECRET_MISSING, (
            f"{where}: container {token.container} reads its token from {token.secret.describe()}, which has no "
            f"usable token under that key")
    if value != expected:
        return ConditionReason.TOKEN_MISMATCH, (
            f"{where}: container {token.container} reads {token.secret.describe()}, another token than the "
            f"operator's {operator.describe()}: admin calls would get 401")
    return None, f"{where}: {token.secret.describe()} holds the operator's token"


def judge(pools: Sequence[PoolToken], operator: SecretKey | None, secrets: Mapping[str, Mapping | None], *,
          namespace: str, copy_from: str | None = None) -> AdminVerdict:
    """The AdminReady condition from each pool's token source and the Secrets read in `namespace`.

    `copy_from`: the namespace the operator's Secret is copied from when it is not copied yet (read-only
    Preview); pools that mount it are then taken as wired."""
    if operator is None:
        return ADMIN_OFF
    expected = secret_token(secrets.get(operator.name), operator.key)
    if expected is None and not copy_from:
        return AdminVerdict(False, ConditionReason.TOKEN_SECRET_MISSING, (
            f"The operator's admin token, {operator.describe()}, is not in namespace {namespace} or holds no usable "
            f"token: every admin call of the playbook is skipped, and pods that mount it wait for it. Create it "
            f"there, or set FORESCALE_ADMIN_TOKEN_COPY_FROM so that the operator copies it"))
    findings = [_finding(p, operator, expected, secrets, namespace, copy_from) for p in pools]
    problems = [(reason, text) for reason, text in findings if reason is not None]
    failing = [(reason, text) for reason, text in problems if reason is not ConditionReason.TOKEN_UNVERIFIED]
    if failing:
        consequence = _CONSEQUENCE.format(name=operator.name, key=operator.key)
        return AdminVerdict(False, failing[0][0], "; ".join(text for _, text in failing) + ". " +
                            consequence[0].upper() + consequence[1:])
    if problems:
        return AdminVerdict(None, problems[0][0], "; ".join(text for _, text in problems))
    return AdminVerdict(True, ConditionReason.TOKEN_WIRED,
                        "Admin calls can authenticate: " + "; ".join(text for _, text in findings))


def pool_tokens(spec: InferenceSpec, seen: Observation, operator: SecretKey) -> list[PoolToken]:
    """Each pool's token source: an adopted pool's from its Deployment's template (as observed), the pools
    Forescale creates the operator's Secret (children.py mounts it). A targetRef not found is left out."""
    entries = []
    for pool in (spec.a, spec.b):
        if not pool.adopted:
            entries.append(PoolToken(pool.name, PodToken("", secret=operator), False))
            continue
        observed = seen.pool(pool.name)
        if observed.template is not None:
            entries.append(PoolToken(pool.name, pod_token(observed.template), True, observed.name))
    return entries


async def check(api: KubeApi, owner: Owner, spec: InferenceSpec, seen: Observation,
                secret_ref: tuple[str, str] | None, copy_from: str | None = None) -> AdminVerdict | None:
    """Read the Secrets the pools' tokens come from and judge; reads only (Preview stays read only).

    `secret_ref` is FORESCALE_ADMIN_TOKEN_SECRET, `copy_from` FORESCALE_ADMIN_TOKEN_COPY_FROM. None when
    the API server could not answer for now: the condition keeps what it said, and the tick goes on."""
    if secret_ref is None:
        return ADMIN_OFF
    operator = SecretKey(*secret_ref)
    entries = pool_tokens(spec, seen, operator)
    names = sorted({operator.name} | {e.token.secret.name for e in entries if e.token.secret is not None})
    secrets: dict[str, Mapping | None] = {}
    for name in names:
        try:
            secrets[name] = await api.get(SECRETS, owner.namespace, name)
        except ApiError as exc:
            if exc.retryable:
                # Not worth a tick (scaling goes on); nor a flip to Unknown, which would repeat the Warning after it.
                logger.info("%s/%s: AdminReady not checked this time: %s", owner.namespace, owner.name, exc)
                return None
            return AdminVerdict(None, ConditionReason.TOKEN_UNVERIFIED,
                                f"Cannot read Secret {name} in {owner.namespace} ({exc.status} {exc.reason}): "
                                f"the pools' admin token is not checked")
    # Preview with a targetRef writes nothing, so the copy of the operator's Secret waits for Auto.
    pending = (copy_from if spec.preview and spec.adopts and copy_from and copy_from != owner.namespace
               and secrets.get(operator.name) is None else None)
    return judge(entries, operator, secrets, namespace=owner.namespace, copy_from=pending)


def record(update: StatusUpdate, verdict: AdminVerdict | None) -> None:
    """Write the AdminReady condition (None: leave it as it is)."""
    if verdict is None:
        return
    update.condition(ConditionType.ADMIN_READY, verdict.status, verdict.reason, verdict.message)


async def report(events: EventSink, status: Mapping[str, Any], verdict: AdminVerdict | None, owner: Owner) -> bool:
    """One AdminTokenMissing Warning when AdminReady turns False, or when its finding changes; never per tick.
    True when it posted one (the tick then writes the finding to status on the same tick)."""
    if verdict is None or not verdict.warns:
        return False
    old = next((c for c in status.get("conditions") or []
                if isinstance(c, Mapping) and c.get("type") == ConditionType.ADMIN_READY.value), {})
    if old.get("status") == "False" and old.get("message") == verdict.message:
        return False
    logger.warning("%s/%s: %s", owner.namespace, owner.name, verdict.message)
    await events.post(Reason.ADMIN_TOKEN_MISSING, verdict.message)
    return True
