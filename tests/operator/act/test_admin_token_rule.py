"""Issue 19, defect 4 (operator side): the admin token read from a Secret follows the model server's rule."""

from __future__ import annotations

import base64

import pytest

from forescale_operator.act.admin_token import read_admin_token
from forescale_server.admin_token import AdminToken


class _Api:
    def __init__(self, secret):
        self.secret = secret

    async def get(self, ref, namespace, name):
        return self.secret


def _data(text: str) -> dict:
    return {"data": {"token": base64.b64encode(text.encode()).decode()}}


CASES = [
    (_data("tok\n"), "tok"),
    ({"stringData": {"token": "  tok\t"}}, "tok"),
    (_data(" \n"), None),
    ({"stringData": {"token": ""}}, None),
    (_data("a\nb"), None),
    (_data("tök"), None),
    ({"data": {"token": "%%%"}}, None),
    ({"data": {}}, None),
]


@pytest.mark.parametrize("secret,expected", CASES)
async def test_secret_token_is_stripped_or_refused_like_the_server_does(secret, expected):
    token = await read_admin_token(_Api(secret), "default", ("admin", "token"))
    assert token == expected
    # The server, given the same text, accepts exactly the same token (or refuses at start-up).
    raw = secret.get("stringData", {}).get("token")
    if raw is None and "token" in secret.get("data", {}) and secret["data"]["token"] != "%%%":
        raw = base64.b64decode(secret["data"]["token"]).decode()
    if raw:
        try:
            server = AdminToken.from_env({"FORESCALE_ADMIN_TOKEN": raw})
        except ValueError:
            server = None
        assert (server is not None and server.enabled) is (expected is not None)
