"""Train the default forecaster model shipped inside the package.

    .venv/bin/python predictor/scripts/train_default_model.py [--traces DIR] [--out FILE]

What it is trained on (recorded in the model's metadata, and stated in
docs/predictor.md):

- **Rates are real.** Request-rate series from `FORESCALE_TRACES`: the
  Microsoft cloud-monitoring MongoDB application RPS (4 series) and data
  ingress rates (5 series), 1-minute samples over 11 days; the Azure LLM
  inference trace (2023, conversation) and the Mooncake conversation trace,
  each binned into 15 s request counts.
- **Latency is derived, not measured.** No public trace pairs GPU latency with
  request rate, so each rate series is scaled onto a pool of
  `replicas` pods (2-6) running at a mean utilisation of 35-60% of one pod's
  saturation rate, and p99 latency is computed from it with the calibrated
  service model `forescale_profiles.service_time.derived_latency_ms`
  (default profile, fp16). A 5% log-normal measurement noise is added, as a
  p99 read from histogram buckets is itself an estimate.
- **Step.** The model steps at 15 s (the operator's default loop) with a
  lookback of 16 steps (4 minutes) and a horizon of 12 steps (180 s). The
  15 s request traces are used as they are. The 1-minute series are used
  step for step (each 1-minute sample taken as one 15 s step): this keeps
  their real step-to-step variability, where interpolating them to 15 s
  would invent a smoothness no live series has. The model has no
  time-of-day input, so this compression changes nothing it can see.
- **Scale.** Every window is normalised by its own recent level (see
  scaling.py), so one model serves services of any size.
- **Gaps.** The model reads each feature carried forward plus an observed
  indicator (gaps.py). A step with a rate of 0 has no latency (NaN, as a live
  series has); ingress-02 is idle 63% of the time, so idle runs are real.
  Training also blanks one run of 1-8 steps in 20% of windows (missing
  scrapes), and NaN targets are left out of the loss.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from forescale_predictor import DEFAULT_MODEL_PATH, LATENCY_MS, RATE
from forescale_predictor.csv_source import load_csv
from forescale_predictor.model_config import ModelConfig
from forescale_predictor.model_file import save
from forescale_predictor.request_traces import load_azure_trace, load_mooncake_trace
from forescale_predictor.resample import fill_gaps
from forescale_predictor.training import Segment, TrainOptions, train

STEP = 15.0
VARIANTS_PER_SERIES = 2


def rate_series(traces: Path) -> list[tuple[str, np.ndarray]]:
    """(name, rate values on consecutive steps) for every training series."""
    out = []
    ms = traces / "ms-cloud-monitoring"
    for folder in ("mongodb-application-rps", "data-ingress-rate"):
        for path in sorted((ms / folder).glob("*.csv")):
            raw = load_csv(path)
            out.append((f"ms-cloud-monitoring/{folder}/{path.name} (1 min samples, used step for step)", fill_gaps(raw.values, 5)))
    azure = traces / "azure-llm-2023" / "AzureLLMInferenceTrace_conv.csv"
    out.append((f"azure-llm-2023/{azure.name} (binned at 15 s)", load_azure_trace(azure, STEP).values))
    moon = traces / "mooncake" / "conversation_trace.jsonl"
    out.append((f"mooncake/{moon.name} (binned at 15 s)", load_mooncake_trace(moon, STEP).values))
    return out


def derive(rates: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    """[T, 2] (latency_ms, rate) for one rate series scaled onto a random pool."""
    from forescale_profiles import service_time as sm

    profile = sm.DEFAULT_PROFILE
    replicas = int(rng.integers(2, 7))
    utilisation = float(rng.uniform(0.35, 0.6))
    mean = np.nanmean(rates)
    scaled = rates / mean * replicas * utilisation * profile.max_rps("fp16")
    latency = sm.derived_latency_ms(scaled, replicas, profile=profile, precision="fp16", quantile=0.99)
    latency = latency * np.exp(rng.normal(0.0, 0.05, size=latency.shape))
    # no request, no latency: an idle step has a rate of 0 and an undefined p99
    latency = np.where(scaled > 0, latency, np.nan)
    info = {"replicas": replicas, "mean_utilisation": round(utilisation, 3), "profile": profile.name}
    return np.stack([latency, scaled], axis=1), info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=Path(os.environ.get("FORESCALE_TRACES", Path(__file__).resolve().parents[2].parent / "shared" / "traces")))
    parser.add_argument("--out", type=Path, default=DEFAULT_MODEL_PATH)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.traces.is_dir():
        print(f"traces not found at {args.traces}; set FORESCALE_TRACES", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    segments, sources = [], []
    times_of = lambda n: np.arange(n, dtype=np.float64) * STEP  # noqa: E731 - step-for-step grid
    for name, rates in rate_series(args.traces):
        for variant in range(VARIANTS_PER_SERIES):
            values, info = derive(rates, rng)
            segments.append(Segment(times_of(len(values)), values, f"{name} #{variant}"))
            sources.append({"series": name, "steps": int(len(values)), **info})
    config = ModelConfig(
        features=(LATENCY_MS, RATE),
        targets=(LATENCY_MS, RATE),
        step_seconds=STEP,
        lookback=16,
        horizon=12,
        quantiles=(0.1, 0.5, 0.9),
        hidden=32,
        ar_steps=8,
        level_steps=4,
        time_features=False,
        gap_channels=True,
    )
    options = TrainOptions(max_epochs=args.epochs, patience=5, windows_per_epoch=16384, seed=args.seed, gap_share=0.2)
    model = train(segments, config, options)
    model.metadata.update(
        {
            "trained_by": "predictor/scripts/train_default_model.py",
            "data": (
                "Real request-rate series (Microsoft cloud-monitoring MongoDB RPS and data-ingress rates, 1-minute samples "
                "used step for step; Azure LLM 2023 and Mooncake request traces binned at 15 s). Latency is NOT measured: "
                "it is derived from each rate through the calibrated service model forescale_profiles.service_time "
                "(p99, default profile, fp16) with 5% log-normal noise, because no public trace pairs GPU latency with rate. "
                "Latency is NaN where the rate is 0 (idle); the model reads observed indicators (gap_channels) and "
                "trained with synthetic missing-scrape runs of 1-8 steps in 20% of windows."
            ),
            "sources": sources,
            "training_span_steps": int(sum(len(s.values) for s in segments)),
        }
    )
    path = save(model, args.out)
    size = path.stat().st_size
    print(json.dumps({"out": str(path), "bytes": size, "validation": model.metadata.get("validation"), "epochs": model.metadata.get("epochs"),
                      "train_seconds": model.metadata.get("train_seconds")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
