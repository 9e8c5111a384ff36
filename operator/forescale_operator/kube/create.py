"""Create an object, or take the one that is already there.

Between a GET that found nothing and the POST, another writer may create the
same name: a second operator replica at start-up, a retried request that had
gone through, or a restart racing its own earlier create. The POST then
answers 409 AlreadyExists. Retrying the whole converge a second later would
get there too, but only after a failed handler and a TemporaryError; reading
the object that won lets the caller adopt it at once (checking, as for any
existing child, that no other controller owns it).
"""

from __future__ import annotations

from typing import Any, Mapping

from .client import KubeApi
from .errors import ApiError
from .refs import Ref


async def create_or_get(api: KubeApi, ref: Ref, namespace: str | None, body: Mapping[str, Any]) -> dict[str, Any] | None:
    """None when `body` was created; the existing object when the create met 409 and the object is there.

    A 409 whose object is gone again by the time it is read (deleted meanwhile) is raised: the caller's retry decides.
    """
    try:
        await api.create(ref, namespace, body)
        return None
    except ApiError as exc:
        if exc.status != 409:
            raise
        existing = await api.get(ref, namespace, body["metadata"]["name"])
        if existing is None:
            raise
        return existing
