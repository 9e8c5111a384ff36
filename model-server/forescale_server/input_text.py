"""Checks on input text that must hold before it reaches a batch.

JSON may carry a lone surrogate (`"\\ud800"`): Python decodes it to a `str`
that no tokenizer can encode. Let through, it fails the whole batch it lands
in (every request batched with it answers 500) and poisons the hot-input set
that `/admin/warmup {"top": N}` replays. It is refused here, per request.
"""

from __future__ import annotations

from .errors import bad_request


def check_encodable(label: str, text: str) -> None:
    """A 400 naming `label` and the position when `text` cannot be encoded as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        raise bad_request(f"'{label}' holds a lone surrogate (U+{code:04X}) at character {exc.start}; "
                          "text must be valid Unicode (a surrogate only as half of a pair)") from None
