"""Post-processing of one generated completion: `stop` sequences."""

from __future__ import annotations


def cut_at_stop(text: str, stop: tuple[str, ...]) -> tuple[str, str]:
    """The text up to (not including) the earliest stop sequence, and OpenAI's
    finish reason: "stop" when one was found, else "length" (decoding here
    always runs to `max_tokens`)."""
    cuts = [i for i in (text.find(s) for s in stop) if i >= 0]
    if cuts:
        return text[: min(cuts)], "stop"
    return text, "length"
