"""Regression tests for issue 19's model-server defects 1, 3 and 4.

1. One bad input failed the whole batch (and was remembered for warm-ups).
3. JSON parser errors (huge integers, deep nesting) answered 500.
4. A token with surrounding whitespace turned the admin API on, then every call was 401.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from forescale_server.admin_token import AdminToken
from forescale_server.backend import BatchResult

from .conftest import AUTH, RecordingBackend, serving

LONE = '{"input": ["fine", "bad \\ud800 text"]}'


class PickyBackend(RecordingBackend):
    """Fails any batch that holds an input containing `poison` (as a tokenizer fails on what it cannot encode)."""

    def __init__(self, poison: str = "poison", batch_s: float = 0.02):
        super().__init__(batch_s=batch_s)
        self.poison = poison

    async def run_batch(self, items):
        self.batches.append(list(items))
        await asyncio.sleep(self.batch_s)
        if any(self.poison in x for x in items):
            raise RuntimeError("cannot encode input")
        return BatchResult([(f"[{len(x)}]", 1) for x in items], compute_s=self.batch_s)


BAD_TEXTS = [
    ("lone high surrogate", '{"input": "a\\ud800b"}', "input[0]", "U+D800"),
    ("lone low surrogate", '{"input": ["ok", "\\udfff"]}', "input[1]", "U+DFFF"),
    ("reversed pair", '{"input": ["\\udc00\\ud800"]}', "input[0]", "U+DC00"),
    ("completion prompt", '{"prompt": ["\\ud83d"]}', "prompt[0]", "U+D83D"),
]


@pytest.mark.parametrize("name,body,field,code", BAD_TEXTS, ids=[c[0] for c in BAD_TEXTS])
async def test_unencodable_text_is_a_400_before_batching(name, body, field, code):
    backend = RecordingBackend()
    async with serving(backend) as (client, server):
        path = "/v1/completions" if "prompt" in body else "/v1/embeddings"
        response = await client.post(path, data=body.encode())
        assert response.status == 400
        message = (await response.json())["error"]["message"]
        assert field in message and code in message
        assert backend.batches == []  # refused before it reached a batch
        assert server.hot.top(10) == []  # and not remembered


async def test_a_valid_surrogate_pair_is_served():
    async with serving(RecordingBackend()) as (client, _):
        response = await client.post("/v1/embeddings", data='{"input": "smile \\ud83d\\ude00"}'.encode())
        assert response.status == 200


async def test_warmup_inputs_with_a_lone_surrogate_are_a_400():
    async with serving(RecordingBackend()) as (client, _):
        response = await client.post("/admin/warmup", data='{"inputs": ["x\\ud800"]}'.encode(), headers=AUTH)
        assert response.status == 400 and "inputs[0]" in (await response.json())["error"]["message"]


@pytest.mark.parametrize("poisoned", [1, 3])
async def test_a_failing_item_fails_only_its_own_request(poisoned):
    """40 concurrent valid requests batched with bad ones: every valid one gets a 200."""
    backend = PickyBackend()
    async with serving(backend) as (client, server):
        bodies = [{"input": [f"valid {i}"]} for i in range(40)]
        for j in range(poisoned):  # in the middle of the burst, where batches are full
            bodies.insert(10 + 10 * j, {"input": [f"poison {j}"]})
        responses = await asyncio.gather(*(client.post("/v1/embeddings", json=b) for b in bodies))
        statuses = {b["input"][0]: r.status for b, r in zip(bodies, responses)}
        assert [s for t, s in statuses.items() if t.startswith("valid")] == [200] * 40
        assert [s for t, s in statuses.items() if t.startswith("poison")] == [500] * poisoned
        assert any(len(b) > 1 for b in backend.batches)  # they did share batches
        assert server.batcher.splits >= 1
        # Nothing that failed is replayed by a warm-up.
        assert not any("poison" in x for x in server.hot.top(1000))
        warm = await client.post("/admin/warmup", json={"top": 50}, headers=AUTH)
        assert warm.status == 200


PARSER_CASES = [
    ("integer of 5000 digits", b'{"input": ["a"], "turn": ' + b"9" * 5000 + b"}", "malformed JSON"),
    ("nesting of 50k levels", b'{"input": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", "nested too deeply"),
    ("nesting in an admin body", b'{"top": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", "nested too deeply"),
]


@pytest.mark.parametrize("name,body,message", PARSER_CASES, ids=[c[0] for c in PARSER_CASES])
async def test_parser_errors_are_400(name, body, message):
    from forescale_server.config import Limits

    async with serving(RecordingBackend(), limits=Limits(max_body_bytes=200_000)) as (client, _):
        path = "/admin/warmup" if "admin" in name else "/v1/embeddings"
        response = await client.post(path, data=body, headers=AUTH)
        assert response.status == 400
        assert message in (await response.json())["error"]["message"]
        assert (await client.post("/v1/embeddings", json={"input": "still up"})).status == 200


TOKENS = [
    # (environment, expected token or the words of the start-up error)
    ({"FORESCALE_ADMIN_TOKEN": "tok\n"}, "tok"),
    ({"FORESCALE_ADMIN_TOKEN": "  tok \t"}, "tok"),
    ({"FORESCALE_ADMIN_TOKEN": ""}, None),
    ({"FORESCALE_ADMIN_TOKEN": " \n"}, "only whitespace"),
    ({"FORESCALE_ADMIN_TOKEN": "to\x00k"}, "U+0000"),
    ({"FORESCALE_ADMIN_TOKEN": "tök"}, "U+00F6"),
    ({"FORESCALE_ADMIN_TOKEN_FILE": "{dir}/t", "file": "tok\n"}, "tok"),
    ({"FORESCALE_ADMIN_TOKEN_FILE": "{dir}/t", "file": "\n"}, "only whitespace"),
    ({"FORESCALE_ADMIN_TOKEN_FILE": "{dir}/t", "file": "a\nb\n"}, "U+000A"),
]


@pytest.mark.parametrize("env,expected", TOKENS)
async def test_admin_token_rule_is_the_same_for_both_forms(tmp_path, env, expected):
    env = {k: v.format(dir=tmp_path) for k, v in env.items()}
    if "file" in env:
        (tmp_path / "t").write_text(env.pop("file"))
    if expected in (None, "tok"):
        token = AdminToken.from_env(env)
        assert token.enabled is (expected is not None)
        if expected:
            assert token.check("Bearer tok")
        return
    with pytest.raises(ValueError, match=re.escape(expected)):
        AdminToken.from_env(env)


async def test_a_token_set_with_a_newline_opens_the_admin_api():
    token = AdminToken.from_env({"FORESCALE_ADMIN_TOKEN": "tok\n"})
    async with serving(RecordingBackend(), token=None) as (client, server):
        server.token = token
        response = await client.post("/admin/log-level", json={"level": "INFO", "seconds": 1},
                                     headers={"Authorization": "Bearer tok"})
        assert response.status == 200
