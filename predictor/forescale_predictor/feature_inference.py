"""What a single training series measures, told from its name: latency in ms, or a request rate.

`forescale train --csv FILE` used to call every series a latency unless told
otherwise, so a request-rate series trained a latency model in silence. The
column name (or the PromQL query) usually says which it is; when it does not
(`value`, `y`), training stops with a one-line error asking for `--feature`,
because a model of the wrong quantity loads fine and forecasts nonsense.
"""

from __future__ import annotations

import re

#: words that make a name a latency (they win over rate words: `request_latency_ms` is a latency)
LATENCY_WORDS = frozenset({"latency", "latencies", "p50", "p90", "p95", "p99", "p999", "duration", "durations",
                           "ttft", "tpot", "delay", "responsetime", "histogram_quantile"})
#: words that make a name a request rate
RATE_WORDS = frozenset({"rate", "rates", "rps", "qps", "requests", "request", "reqs", "req", "throughput",
                        "arrivals", "irate", "increase"})
#: unit words that mean seconds: the model's latency feature is in milliseconds
SECONDS_WORDS = frozenset({"s", "sec", "secs", "second", "seconds"})
#: a query that multiplies by 1000 has turned its seconds into milliseconds
_TIMES_1000 = re.compile(r"\*\s*(1000|1e3)\b")


class FeatureUnknown(ValueError):
    """The name does not say what the series measures; the message says how to tell."""


def _words(name: str) -> list[str]:
    # camelCase and every non-alphanumeric split words: `requestLatencyMs` -> request latency ms
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    words = [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]
    return words + ["histogram_quantile"] * ("histogram_quantile" in name)


def infer_feature(name: str, *, what: str = "column") -> str:
    """`latency_ms` or `rate` for the series named `name` (a CSV column or a PromQL query); FeatureUnknown else."""
    words = _words(name)
    if LATENCY_WORDS.intersection(words):
        if SECONDS_WORDS.intersection(words) and not _TIMES_1000.search(name):
            raise FeatureUnknown(f"{what} {name!r} looks like a latency in seconds, but the model forecasts milliseconds; "
                                 f"convert it to ms, or pass --feature value to train on it as it is")
        return "latency_ms"
    if RATE_WORDS.intersection(words):
        return "rate"
    raise FeatureUnknown(f"cannot tell from the {what} {name!r} whether it is a latency or a request rate; "
                         f"pass --feature latency_ms, --feature rate or --feature value")
