"""The admin token works in the default install: the chart makes a random token Secret and tells the operator.

Without a token the playbook's precision fallback, cache warm-up and debug
logging are off, so the default creates one (operator.adminTokenSecret.create),
in the release namespace; the operator copies it into each resource's namespace
(FORESCALE_ADMIN_TOKEN_COPY_FROM). A Secret the user names is used as it is, and
the feature can be turned off. Across `helm upgrade` the token is kept through
`lookup`, which `helm template` cannot show (it has no cluster).
"""

from __future__ import annotations

import base64
import re

import pytest

from chart_tools import NAMESPACE, env_of, of_kind, one, render

CHART_TOKEN = "forescale-admin-token"

#: (case, values) -> (Secret the chart makes or None, FORESCALE_ADMIN_TOKEN_SECRET, FORESCALE_ADMIN_TOKEN_COPY_FROM)
CASES = [
    ("default: the chart's own token, copied from the release namespace", {},
     CHART_TOKEN, f"{CHART_TOKEN}/token", NAMESPACE),
    ("default with another key", {"operator.adminTokenSecret.key": "bearer"},
     CHART_TOKEN, f"{CHART_TOKEN}/bearer", NAMESPACE),
    ("a Secret of the user's: used, none made, nothing copied", {"operator.adminTokenSecret.name": "team-admin"},
     None, "team-admin/token", ""),
    ("a named Secret wins over create", {"operator.adminTokenSecret.name": "team-admin",
                                         "operator.adminTokenSecret.create": "true"},
     None, "team-admin/token", ""),
    ("turned off explicitly", {"operator.adminTokenSecret.create": "false"},
     None, "", ""),
    ("the chart's name follows fullnameOverride", {"fullnameOverride": "fs"},
     "fs-admin-token", "fs-admin-token/token", NAMESPACE),
]


@pytest.mark.parametrize(("case", "values", "secret", "env_secret", "env_copy_from"), CASES, ids=[c[0] for c in CASES])
def test_admin_token_wiring(case, values, secret, env_secret, env_copy_from):
    manifests = render(set_values=values)
    env = env_of(one(manifests, "Deployment"))
    assert env["FORESCALE_ADMIN_TOKEN_SECRET"] == env_secret
    assert env["FORESCALE_ADMIN_TOKEN_COPY_FROM"] == env_copy_from
    secrets = of_kind(manifests, "Secret")
    if secret is None:
        assert secrets == []
        return
    (made,) = secrets
    assert (made["metadata"]["name"], made["metadata"]["namespace"]) == (secret, NAMESPACE)
    key = env_secret.split("/")[1]
    assert list(made["data"]) == [key]
    assert re.fullmatch(r"[A-Za-z0-9]{48}", base64.b64decode(made["data"][key]).decode())


def test_each_install_gets_its_own_token():
    """Random, not a default every install shares (`helm template` has no cluster for lookup to keep one)."""
    # render() caches by values: two spellings of the same values make two helm runs.
    tokens = {one(render(set_values=values), "Secret")["data"]["token"]
              for values in ({}, {"operator.adminTokenSecret.create": "true"})}
    assert len(tokens) == 2
