"""Parsing and bounding of the public request bodies (OpenAI-style).

Every rejection is an `APIError` whose message names the field and the limit,
so a client can fix its request without reading our code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .config import Limits
from .errors import APIError, bad_request
from .input_text import check_encodable


@dataclass(frozen=True)
class EmbeddingRequest:
    inputs: list[str]
    model: str | None
    #: optional chat-session identity, used by the per-conversation-turn cache policy
    conversation: str | None = None
    turn: int | None = None


@dataclass(frozen=True)
class CompletionRequest:
    prompts: list[str]
    model: str | None
    max_tokens: int
    conversation: str | None = None
    turn: int | None = None


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


def _texts(body: dict[str, Any], field: str, limits: Limits) -> list[str]:
    if field not in body:
        raise bad_request(f"'{field}' is required")
    value = body[field]
    if isinstance(value, str):
        items = [value]
    elif isinstance(value, list):
        items = value
    else:
        raise bad_request(f"'{field}' must be a string or a list of strings, got {type(value).__name__}")
    if not items:
        raise bad_request(f"'{field}' is empty")
    if len(items) > limits.max_items:
        raise bad_request(f"'{field}' has {len(items)} items; the limit is {limits.max_items}")
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise bad_request(f"'{field}[{i}]' must be a string, got {type(item).__name__}")
        if not item.strip():
            raise bad_request(f"'{field}[{i}]' is empty")
        if len(item) > limits.max_input_chars:
            raise bad_request(f"'{field}[{i}]' is {len(item)} characters; the limit is {limits.max_input_chars}")
        check_encodable(f"{field}[{i}]", item)
    return items


def _model(body: dict[str, Any]) -> str | None:
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise bad_request(f"'model' must be a string, got {type(model).__name__}")
    return model


def _conversation(body: dict[str, Any]) -> tuple[str | None, int | None]:
    conversation, turn = body.get("conversation_id"), body.get("turn")
    if conversation is not None and not isinstance(conversation, str):
        raise bad_request(f"'conversation_id' must be a string, got {type(conversation).__name__}")
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int) or turn < 0):
        raise bad_request(f"'turn' must be a non-negative integer, got {turn!r}")
    if turn is not None and conversation is None:
        raise bad_request("'turn' needs a 'conversation_id'")
    return conversation, turn


def parse_embedding_request(raw: bytes, limits: Limits) -> EmbeddingRequest:
    """Validate a `POST /v1/embeddings` body."""
    body = decode_json_object(raw, limits)
    inputs = _texts(body, "input", limits)
    fmt = body.get("encoding_format", "float")
    if fmt != "float":
        raise bad_request(f"'encoding_format' {fmt!r} is not supported; use 'float'")
    conversation, turn = _conversation(body)
    return EmbeddingRequest(inputs=inputs, model=_model(body), conversation=conversation, turn=turn)


def parse_completion_request(raw: bytes, limits: Limits) -> CompletionRequest:
    """Validate a `POST /v1/completions` body (greedy decoding; sampling knobs are accepted and ignored)."""
    body = decode_json_object(raw, limits)
    prompts = _texts(body, "prompt", limits)
    max_tokens = body.get("max_tokens", 16)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= limits.max_new_tokens:
        raise bad_request(f"'max_tokens' must be an integer from 1 to {limits.max_new_tokens}, got {max_tokens!r}")
    conversation, turn = _conversation(body)
    return CompletionRequest(prompts=prompts, model=_model(body), max_tokens=max_tokens, conversation=conversation, turn=turn)
