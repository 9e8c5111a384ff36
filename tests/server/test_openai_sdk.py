"""The official `openai` Python SDK against `forescale serve`, real and
`--emulate-gpu`: every call in docs/model-server.md's SDK table works, or is
refused with a 400 naming the field."""

from __future__ import annotations

import base64
import struct

import numpy as np
import openai
import pytest

from forescale_profiles.service_time import PROFILES, DecoderProfile

from .conftest import build_tiny_llama, served_process

DECODER_PROFILE = next(name for name, p in PROFILES.items() if isinstance(p, DecoderProfile))


@pytest.fixture(scope="module", params=["real", "emulated"])
def embeddings_server(request):
    args = ["--model", "minilm", "--threads", "1"] if request.param == "real" else ["--emulate-gpu", "demo"]
    with served_process(args) as base:
        yield request.param, openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)


@pytest.fixture(scope="module", params=["real", "emulated"])
def completions_server(request, tmp_path_factory):
    if request.param == "real":
        path = tmp_path_factory.mktemp("models") / "tiny-llama"
        build_tiny_llama(path)
        args, model = ["--model", str(path), "--threads", "1"], "tiny-llama"
    else:
        args, model = ["--emulate-gpu", DECODER_PROFILE], "minilm"
    with served_process(args) as base:
        yield request.param, model, openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)


def _vector(embedding) -> np.ndarray:
    """The SDK decodes base64 itself only when it chose the format; asked for
    explicitly, base64 comes back as the string the server sent."""
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding), dtype="<f4").astype(np.float64)
    return np.asarray(embedding, dtype=np.float64)


# --- embeddings ---------------------------------------------------------------

EMBEDDING_CALLS = [
    # (case, kwargs, expected number of vectors)
    ("default call (the SDK asks for base64)", {"input": "Tail latency matters."}, 1),
    ("float", {"input": "Tail latency matters.", "encoding_format": "float"}, 1),
    ("base64 explicitly", {"input": ["one", "two", "three"], "encoding_format": "base64"}, 3),
    ("dimensions equal to the model's", {"input": "x", "dimensions": 384}, 1),
    ("token ids", {"input": [101, 7592, 2088, 102]}, 1),
    ("lists of token ids", {"input": [[101, 7592, 102], [101, 2088, 102]]}, 2),
]


@pytest.mark.parametrize("case,kwargs,count", EMBEDDING_CALLS, ids=[c[0] for c in EMBEDDING_CALLS])
def test_sdk_embeddings(embeddings_server, case, kwargs, count):
    _, client = embeddings_server
    response = client.embeddings.create(model="minilm", **kwargs)
    assert [d.index for d in response.data] == list(range(count))
    for d in response.data:
        vector = _vector(d.embedding)
        assert len(vector) == 384 and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4
    assert response.usage.prompt_tokens > 0 and response.model == "minilm"


def test_base64_and_float_carry_the_same_vector(embeddings_server):
    _, client = embeddings_server
    as_float = client.embeddings.create(model="minilm", input="same text", encoding_format="float").data[0].embedding
    # The SDK decodes base64 itself; decode the raw wire form too, as float32 little-endian.
    raw = client.embeddings.with_raw_response.create(model="minilm", input="same text", encoding_format="base64").http_response.json()
    blob = base64.b64decode(raw["data"][0]["embedding"])
    as_base64 = struct.unpack(f"<{len(blob) // 4}f", blob)
    assert len(as_base64) == len(as_float) == 384
    assert max(abs(a - b) for a, b in zip(as_float, as_base64)) < 1e-6


def test_token_ids_embed_like_the_same_text(embeddings_server):
    kind, client = embeddings_server
    if kind == "emulated":
        pytest.skip("emulated vectors are picked by a hash of the input, not computed from tokens")
    from tokenizers import Tokenizer

    from forescale_server.model_files import minilm_dir

    tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads to 128; padding ids are not part of the text
    ids = tokenizer.encode("Kubernetes schedules pods.").ids
    by_ids = client.embeddings.create(model="minilm", input=ids, encoding_format="float").data[0].embedding
    by_text = client.embeddings.create(model="minilm", input="Kubernetes schedules pods.", encoding_format="float").data[0].embedding
    assert float(np.dot(by_ids, by_text)) > 0.9999


EMBEDDING_REFUSALS = [
    # (case, kwargs, status, param, code)
    ("shorter dimensions", {"input": "x", "dimensions": 128}, 400, "dimensions", None),
    ("unknown encoding", {"input": "x", "encoding_format": "int8"}, 400, "encoding_format", None),
    ("unknown model", {"input": "x", "model": "text-embedding-3-small"}, 404, "model", "model_not_found"),
    ("negative token id", {"input": [101, -1]}, 400, "input", None),
    ("token id beyond the vocabulary", {"input": [101, 999_999]}, 400, "input", None),
]


@pytest.mark.parametrize("case,kwargs,status,param,code", EMBEDDING_REFUSALS, ids=[c[0] for c in EMBEDDING_REFUSALS])
def test_sdk_embedding_refusals_name_the_field(embeddings_server, case, kwargs, status, param, code):
    _, client = embeddings_server
    kwargs = {"model": "minilm", **kwargs}
    with pytest.raises(openai.APIStatusError) as caught:
        client.embeddings.create(**kwargs)
    error = caught.value
    assert error.status_code == status
    assert error.body["param"] == param and error.body["code"] == code and error.body["type"] == "invalid_request_error"
    assert param in error.body["message"] or (code and "unknown model" in error.body["message"])


def test_sdk_models(embeddings_server):
    _, client = embeddings_server
    assert [m.id for m in client.models.list()] == ["minilm"]
    assert client.models.retrieve("all-MiniLM-L6-v2").id == "minilm"
    with pytest.raises(openai.NotFoundError) as caught:
        client.models.retrieve("gpt-9")
    assert caught.value.body["code"] == "model_not_found"


# --- completions ----------------------------------------------------------------

def test_sdk_completion_plain_n_and_echo(completions_server):
    _, model, client = completions_server
    plain = client.completions.create(model=model, prompt="The quick brown fox", max_tokens=6)
    assert len(plain.choices) == 1 and plain.choices[0].finish_reason == "length" and plain.choices[0].text
    assert plain.usage.completion_tokens == 6
    several = client.completions.create(model=model, prompt=["The quick brown fox", "Hello"], max_tokens=6, n=3)
    assert [c.index for c in several.choices] == list(range(6))
    assert {c.text for c in several.choices[:3]} == {plain.choices[0].text}  # greedy: n equal choices
    echoed = client.completions.create(model=model, prompt="The quick brown fox", max_tokens=6, echo=True)
    assert echoed.choices[0].text == "The quick brown fox" + plain.choices[0].text


def test_sdk_completion_stream_ends_with_done(completions_server):
    _, model, client = completions_server
    whole = client.completions.create(model=model, prompt=["one", "two"], max_tokens=4)
    chunks = list(client.completions.create(model=model, prompt=["one", "two"], max_tokens=4, stream=True,
                                            stream_options={"include_usage": True}))
    texts = {}
    for chunk in chunks[:-1]:
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + choice.text
    assert texts == {c.index: c.text for c in whole.choices}
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 8
    # The raw stream: SSE events, `data: [DONE]` last.
    raw = client.completions.with_raw_response.create(model=model, prompt="one", max_tokens=2, stream=True).http_response
    events = [line for line in raw.read().decode().split("\n\n") if line]
    assert raw.headers["content-type"].startswith("text/event-stream") and events[-1] == "data: [DONE]"


def test_sdk_completion_stop_and_token_ids(completions_server):
    _, model, client = completions_server
    text = client.completions.create(model=model, prompt="Hello", max_tokens=8).choices[0].text
    stop = text[1:3]
    cut = client.completions.create(model=model, prompt="Hello", max_tokens=8, stop=[stop]).choices[0]
    assert cut.finish_reason == "stop" and cut.text == text[: text.find(stop)]
    by_ids = client.completions.create(model=model, prompt=[[101, 7592, 102], [101, 2088, 102]], max_tokens=3)
    assert len(by_ids.choices) == 2 and by_ids.usage.prompt_tokens == 6


COMPLETION_REFUSALS = [
    ("logprobs", {"logprobs": 2}, "logprobs"),
    ("suffix", {"suffix": "!"}, "suffix"),
    ("echo of token ids", {"prompt": [101, 102], "echo": True}, "echo"),
    ("best_of below n", {"n": 3, "best_of": 2}, "best_of"),
    ("n too large", {"n": 17}, "n"),
    ("max_tokens zero", {"max_tokens": 0}, "max_tokens"),
    ("stream_options without stream", {"stream_options": {"include_usage": True}}, "stream_options"),
]


@pytest.mark.parametrize("case,kwargs,param", COMPLETION_REFUSALS, ids=[c[0] for c in COMPLETION_REFUSALS])
def test_sdk_completion_refusals_name_the_field(completions_server, case, kwargs, param):
    _, model, client = completions_server
    kwargs = {"model": model, "prompt": "Hello", "max_tokens": 2, **kwargs}
    with pytest.raises(openai.BadRequestError) as caught:
        client.completions.create(**kwargs)
    assert caught.value.body["param"] == param and f"'{param}'" in caught.value.body["message"]
