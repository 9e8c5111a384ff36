"""The two wire forms of one embedding: OpenAI's `encoding_format`.

Backends hand the server each vector already serialised as a JSON array (so a
cache hit costs no encoding); `base64` is derived from it on the way out:
the vector as little-endian float32, base64-encoded, which the openai SDK
decodes with `np.frombuffer(..., dtype="float32")`. The JSON array carries 7
decimals, finer than float32 resolves for a unit vector's components, so the
round trip loses nothing the client could see.
"""

from __future__ import annotations

import base64

import numpy as np
import orjson


def dimensions_of(fragment: str) -> int:
    """How many numbers the JSON array `fragment` holds."""
    return fragment.count(",") + 1 if fragment.strip("[] ") else 0


def as_base64(fragment: str) -> str:
    """The JSON array `fragment` as base64 of little-endian float32."""
    return base64.b64encode(np.asarray(orjson.loads(fragment), dtype="<f4").tobytes()).decode("ascii")


def wire_form(fragment: str, encoding_format: str) -> str:
    """The JSON text of the `embedding` field in the requested format."""
    if encoding_format == "base64":
        return '"' + as_base64(fragment) + '"'
    return fragment
