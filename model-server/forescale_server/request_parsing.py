"""Parsing and bounding of the public request bodies (OpenAI-style).

Every rejection is an `APIError` whose message names the field and the limit,
so a client can fix its request without reading our code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Union

from .config import Limits
from .errors import APIError, bad_request
from .input_text import check_encodable


#: one input: a text, or token ids in the model's own vocabulary
Item = Union[str, tuple[int, ...]]

#: most completions one request may ask for per prompt (`n`, `best_of`)
MAX_CHOICES = 16
#: most stop sequences, as OpenAI allows
MAX_STOP = 4


@dataclass(frozen=True)
class EmbeddingRequest:
    inputs: list[Item]
    model: str | None
    #: optional chat-session identity, used by the per-conversation-turn cache policy
    conversation: str | None = None
    turn: int | None = None
    #: "float" (a JSON array) or "base64" (little-endian float32, what the openai SDK asks for)
    encoding_format: str = "float"
    #: the length the client asked for; the server refuses any but the model's own
    dimensions: int | None = None


@dataclass(frozen=True)
class CompletionRequest:
    prompts: list[Item]
    model: str | None
    max_tokens: int
    conversation: str | None = None
    turn: int | None = None
    #: completions per prompt (greedy decoding makes them equal)
    n: int = 1
    #: prepend the prompt to each completion
    echo: bool = False
    #: answer as server-sent events ending with `data: [DONE]`
    stream: bool = False
    #: with `stream`, a last chunk carrying `usage` (stream_options.include_usage)
    include_usage: bool = False
    #: cut each completion before the first of these
    stop: tuple[str, ...] = ()


def decode_json_object(raw: bytes, limits: Limits) -> dict[str, Any]:
    """The body as a JSON object, or a 400/413 naming what is wrong with it."""
    if len(raw) > limits.max_body_bytes:
        raise APIError(413, f"request body is {len(raw)} bytes; the limit is {limits.max_body_bytes}", "invalid_request_error")
    if not raw.strip():
        raise bad_request("request body is empty; expected a JSON object")
    try:
        body = json.loads(raw)
    except RecursionError:
        raise bad_request("malformed JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, bad UTF-8, an integer of over 4,300 digits
        raise bad_request(f"malformed JSON: {exc}") from None
    if not isinstance(body, dict):
        raise bad_request(f"request body must be a JSON object, got {type(body).__name__}")
    return body


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _token_ids(value: list, field: str, limits: Limits) -> tuple[int, ...]:
    """One token-id input; the upper bound of the vocabulary is the backend's
    to check (`ModelServer.check_tokens`)."""
    if not value:
        raise bad_request(f"'{field}' is an empty list of token ids", field)
    if len(value) > limits.max_input_chars:
        raise bad_request(f"'{field}' has {len(value)} token ids; the limit is {limits.max_input_chars}", field)
    for i, token in enumerate(value):
        if not _is_int(token) or token < 0:
            raise bad_request(f"'{field}[{i}]' must be a non-negative integer token id, got {token!r}", field)
    return tuple(value)


def _inputs(body: dict[str, Any], field: str, limits: Limits) -> list[Item]:
    """A string, a list of strings, a list of token ids or a list of such lists:
    the four shapes OpenAI accepts for `input` and `prompt`."""
    if field not in body:
        raise bad_request(f"'{field}' is required", field)
    value = body[field]
    if isinstance(value, str):
        items: list = [value]
    elif isinstance(value, list):
        items = value
    else:
        raise bad_request(f"'{field}' must be a string, a list of strings, a list of token ids or a list of token-id lists, "
                          f"got {type(value).__name__}", field)
    if not items:
        raise bad_request(f"'{field}' is empty", field)
    if all(_is_int(x) for x in items):
        return [_token_ids(items, field, limits)]
    if len(items) > limits.max_items:
        raise bad_request(f"'{field}' has {len(items)} items; the limit is {limits.max_items}", field)
    out: list[Item] = []
    for i, item in enumerate(items):
        name = f"{field}[{i}]"
        if isinstance(item, list):
            out.append(_token_ids(item, name, limits))
            continue
        if not isinstance(item, str):
            raise bad_request(f"'{name}' must be a string or a list of token ids, got {type(item).__name__}", field)
        if not item.strip():
            raise bad_request(f"'{name}' is empty", field)
        if len(item) > limits.max_input_chars:
            raise bad_request(f"'{name}' is {len(item)} characters; the limit is {limits.max_input_chars}", field)
        check_encodable(name, item)
        out.append(item)
    return out


def _model(body: dict[str, Any]) -> str | None:
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise bad_request(f"'model' must be a string, got {type(model).__name__}", "model")
    return model


def _conversation(body: dict[str, Any]) -> tuple[str | None, int | None]:
    conversation, turn = body.get("conversation_id"), body.get("turn")
    if conversation is not None and not isinstance(conversation, str):
        raise bad_request(f"'conversation_id' must be a string, got {type(conversation).__name__}", "conversation_id")
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int) or turn < 0):
        raise bad_request(f"'turn' must be a non-negative integer, got {turn!r}", "turn")
    if turn is not None and conversation is None:
        raise bad_request("'turn' needs a 'conversation_id'", "turn")
    return conversation, turn


def _choice_count(body: dict[str, Any], field: str, low: int) -> int | None:
    value = body.get(field)
    if value is None:
        return None
    if not _is_int(value) or not low <= value <= MAX_CHOICES:
        raise bad_request(f"'{field}' must be an integer from {low} to {MAX_CHOICES}, got {value!r}", field)
    return value


def _flag(body: dict[str, Any], field: str) -> bool:
    value = body.get(field)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise bad_request(f"'{field}' must be true or false, got {value!r}", field)
    return value


def _stop(body: dict[str, Any]) -> tuple[str, ...]:
    value = body.get("stop")
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_STOP or not all(isinstance(x, str) and x for x in items):
        raise bad_request(f"'stop' must be a non-empty string or a list of 1 to {MAX_STOP} non-empty strings, got {value!r}", "stop")
    return tuple(items)


def parse_embedding_request(raw: bytes, limits: Limits) -> EmbeddingRequest:
    """Validate a `POST /v1/embeddings` body."""
    body = decode_json_object(raw, limits)
    inputs = _inputs(body, "input", limits)
    fmt = body.get("encoding_format")
    if fmt is None:
        fmt = "float"
    if fmt not in ("float", "base64"):
        raise bad_request(f"'encoding_format' {fmt!r} is not supported; use 'float' or 'base64'", "encoding_format")
    dimensions = body.get("dimensions")
    if dimensions is not None and (not _is_int(dimensions) or dimensions < 1):
        raise bad_request(f"'dimensions' must be a positive integer, got {dimensions!r}", "dimensions")
    conversation, turn = _conversation(body)
    return EmbeddingRequest(inputs=inputs, model=_model(body), conversation=conversation, turn=turn,
                            encoding_format=fmt, dimensions=dimensions)


def parse_completion_request(raw: bytes, limits: Limits) -> CompletionRequest:
    """Validate a `POST /v1/completions` body. Decoding is greedy: temperature,
    top_p, penalties and seed are accepted and have no effect; what cannot be
    honoured (logprobs, suffix) is refused with the field named."""
    body = decode_json_object(raw, limits)
    prompts = _inputs(body, "prompt", limits)
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        max_tokens = 16
    if not _is_int(max_tokens) or not 1 <= max_tokens <= limits.max_new_tokens:
        raise bad_request(f"'max_tokens' must be an integer from 1 to {limits.max_new_tokens}, got {max_tokens!r}", "max_tokens")
    if body.get("logprobs") is not None:
        raise bad_request("'logprobs' is not supported: this server decodes greedily and does not compute log-probabilities", "logprobs")
    if body.get("suffix") not in (None, ""):
        raise bad_request("'suffix' is not supported: this server does not insert text", "suffix")
    n = _choice_count(body, "n", 1) or 1
    best_of = _choice_count(body, "best_of", 1)
    if best_of is not None and best_of < n:
        raise bad_request(f"'best_of' ({best_of}) must be at least 'n' ({n})", "best_of")
    if len(prompts) * n > limits.max_items:
        raise bad_request(f"{len(prompts)} prompts times 'n' {n} is {len(prompts) * n} completions; the limit is {limits.max_items}", "n")
    echo = _flag(body, "echo")
    if echo and any(not isinstance(p, str) for p in prompts):
        raise bad_request("'echo' is supported with text prompts only, not token ids", "echo")
    stream = _flag(body, "stream")
    options = body.get("stream_options")
    if options is not None:
        if not stream:
            raise bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options")
        if not isinstance(options, dict) or set(options) - {"include_usage"}:
            raise bad_request(f"'stream_options' must be an object with 'include_usage' only, got {options!r}", "stream_options")
    include_usage = _flag(options or {}, "include_usage")
    conversation, turn = _conversation(body)
    return CompletionRequest(prompts=prompts, model=_model(body), max_tokens=max_tokens, conversation=conversation, turn=turn,
                             n=n, echo=echo, stream=stream, include_usage=include_usage, stop=_stop(body))
