"""Read the model servers' admin token from the Secret named by FORESCALE_ADMIN_TOKEN_SECRET.

The reference is `(secret, key)`, as the configuration validated it at
start-up; it is read in the resource's namespace each time the playbook needs
it (a rotated Secret is picked up). The value is returned, never logged.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

from ..admin_wiring import usable_token
from ..kube.refs import SECRETS

logger = logging.getLogger(__name__)


async def read_admin_token(api: Any, namespace: str, secret_ref: tuple[str, str] | None) -> str | None:
    """The token, or None (admin calls are then reported as skipped) when unset or unreadable."""
    if not secret_ref:
        return None
    name, key = secret_ref
    try:
        secret = await api.get(SECRETS, namespace, name)
    except Exception as exc:  # noqa: BLE001 - report and carry on without admin calls
        logger.warning("cannot read Secret %s/%s for the admin token: %s", namespace, name, type(exc).__name__)
        return None
    if secret is None:
        logger.warning("Secret %s/%s (FORESCALE_ADMIN_TOKEN_SECRET) not found; admin calls are skipped", namespace, name)
        return None
    raw = (secret.get("data") or {}).get(key)
    if raw is None:
        text = (secret.get("stringData") or {}).get(key)
        if text is None:
            logger.warning("Secret %s/%s has no key %r; admin calls are skipped", namespace, name, key)
            return None
    else:
        try:
            text = base64.b64decode(raw).decode()
        except (ValueError, UnicodeDecodeError):
            logger.warning("Secret %s/%s key %r is not valid base64 text; admin calls are skipped", namespace, name, key)
            return None
    token = usable_token(text)
    if token is None:
        logger.warning("Secret %s/%s key %r is empty or holds characters an Authorization header cannot carry "
                       "(printable ASCII only); admin calls are skipped", namespace, name, key)
    return token
