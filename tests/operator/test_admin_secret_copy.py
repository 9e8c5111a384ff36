"""The admin-token Secret copied from the operator's namespace into each resource's (actuators/admin_secret.py).

The chart's default install makes one token Secret in its release namespace
(FORESCALE_ADMIN_TOKEN_COPY_FROM); pods can only mount a Secret of their own
namespace, so the operator copies it there before it creates the pools.
Against the emulated API server: "ml" plays the release namespace.
"""

from __future__ import annotations

import base64

import pytest

from forescale_operator.actuators import Actuators
from forescale_operator.actuators.admin_secret import TokenSource, ensure_copy
from forescale_operator.children import Owner
from forescale_operator.events import RecordingEvents
from forescale_operator.handlers.deps import HandlerDeps
from forescale_operator.handlers.reconcile import reconcile

SOURCE = TokenSource("ml", "forescale-admin-token", "token")
CHAT = Owner("chat", "default", "uid-chat")
EMBED = Owner("embed", "default", "uid-embed")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _secret(namespace: str, token: str, *, ours: bool, owners: tuple[Owner, ...] = ()) -> dict:
    meta = {"name": SOURCE.name, "namespace": namespace}
    if ours:
        meta["labels"] = {"app.kubernetes.io/managed-by": "forescale"}
        meta["ownerReferences"] = [{**o.reference(), "controller": False, "blockOwnerDeletion": False} for o in owners]
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {"token": _b64(token)}}


#: (case, the source's token or None, the copy already there or None, owner) -> (result, token in default, owner uids)
CASES = [
    ("first resource: the copy is made, owned by it", "s3cret", None, CHAT,
     "created", "s3cret", ["uid-chat"]),
    ("second resource of the namespace: added as an owner", "s3cret", _secret("default", "s3cret", ours=True, owners=(CHAT,)),
     EMBED, "updated", "s3cret", ["uid-chat", "uid-embed"]),
    ("the source was rotated: the copy follows", "n3w", _secret("default", "old", ours=True, owners=(CHAT,)), CHAT,
     "updated", "n3w", ["uid-chat"]),
    ("already in step: no write", "s3cret", _secret("default", "s3cret", ours=True, owners=(CHAT,)), CHAT,
     "unchanged", "s3cret", ["uid-chat"]),
    ("the user's own Secret of that name: theirs wins", "s3cret", _secret("default", "mine", ours=False), CHAT,
     "user's own", "mine", []),
    ("no source Secret: nothing is made", None, None, CHAT,
     "source missing", None, []),
    ("the resource lives in the source namespace: nothing to copy", "s3cret", None, Owner("chat", "ml", "uid-ml"),
     "source namespace", None, []),
]


@pytest.mark.parametrize(("case", "source_token", "existing", "owner", "result", "token", "owner_uids"),
                         CASES, ids=[c[0] for c in CASES])
async def test_copy(cluster, api, case, source_token, existing, owner, result, token, owner_uids):
    if source_token is not None:
        cluster.put(_secret("ml", source_token, ours=False))
    if existing is not None:
        cluster.put(existing)
    assert await ensure_copy(api, owner, SOURCE) == result
    copy = cluster.get("secrets", "default", SOURCE.name)
    if token is None:
        assert copy is None
        return
    assert base64.b64decode(copy["data"]["token"]).decode() == token
    assert [r["uid"] for r in copy["metadata"].get("ownerReferences") or []] == owner_uids
    # Shared by the namespace's resources: none of them is its controller.
    assert not any(r.get("controller") for r in copy["metadata"].get("ownerReferences") or [])


async def test_reconcile_copies_the_token_before_it_creates_the_pools(cluster, api, example):
    cluster.put(_secret("ml", "s3cret", ours=False))
    deps = HandlerDeps(api=api, actuators=Actuators(api, (SOURCE.name, "token"), "ml"), events=RecordingEvents())
    await reconcile(cluster.put(example()), deps)
    created = [r.resource for r in cluster.request_log if r.verb == "create"]
    assert created.index("secrets") < created.index("deployments")
    pod = cluster.get("deployments", "default", "chat-a")["spec"]["template"]["spec"]
    assert pod["volumes"][-1]["projected"]["sources"][0]["secret"]["name"] == SOURCE.name


async def test_without_copy_from_no_secret_is_written(cluster, api, example):
    """A user-named Secret (no FORESCALE_ADMIN_TOKEN_COPY_FROM) is expected in each namespace, as before."""
    deps = HandlerDeps(api=api, actuators=Actuators(api, ("forescale-admin", "token")), events=RecordingEvents())
    await reconcile(cluster.put(example()), deps)
    assert cluster.objects("secrets", "default") == []
