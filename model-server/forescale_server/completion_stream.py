"""Server-sent events for `stream: true` completions, framed as OpenAI frames
them: one `data: {json}` event per chunk, a blank line after each, and
`data: [DONE]` last. The openai SDK stops reading at `[DONE]`.

Decoding finishes before the first chunk is sent (the batch worker decodes a
whole request at a time), so each choice arrives as one chunk carrying its
whole text and its finish reason; with `stream_options.include_usage` a last
chunk with no choices carries the token counts.
"""

from __future__ import annotations

import json

DONE = b"data: [DONE]\n\n"


def _event(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def completion_events(response: dict, include_usage: bool) -> list[bytes]:
    """The events of a finished completion `response` (the non-streamed body)."""
    head = {k: response[k] for k in ("id", "object", "created", "model")}
    events = [_event({**head, "choices": [choice]}) for choice in response["choices"]]
    if include_usage:
        events.append(_event({**head, "choices": [], "usage": response["usage"]}))
    events.append(DONE)
    return events
