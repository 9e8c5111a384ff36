"""Where the predictor benchmarks find the real traces."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def traces_dir() -> Path:
    path = Path(os.environ.get("FORESCALE_TRACES", REPO.parent / "shared" / "traces"))
    if not path.is_dir():
        sys.exit(f"real traces not found at {path}; set FORESCALE_TRACES to the traces folder")
    return path


def dev_series(traces: Path) -> list[Path]:
    """Every development series of the issue: Microsoft rate and latency series, NAB CloudWatch, Azure and Mooncake traces."""
    ms = traces / "ms-cloud-monitoring"
    out: list[Path] = []
    for folder in ("mongodb-application-rps", "data-ingress-rate", "middle-tier-api-dependency-latency"):
        out += sorted((ms / folder).glob("*.csv"))
    out += sorted((traces / "nab" / "realAWSCloudwatch").glob("*.csv"))
    out.append(traces / "azure-llm-2023" / "AzureLLMInferenceTrace_conv.csv")
    out.append(traces / "mooncake" / "conversation_trace.jsonl")
    return out
