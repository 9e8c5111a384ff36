"""What `forescale demo` runs: the InferenceDeployment, the load and the incident, with their defaults."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class DemoSettings:
    #: length of the load, seconds (the built-in pattern is stretched to it)
    duration_seconds: float = 360.0
    #: mean offered rate, requests per second (two cores serve the whole stack)
    mean_rate: float = 20.0
    #: an arrival trace to replay instead of the built-in pattern (Azure CSV, Mooncake JSONL, rates CSV)
    trace: str | None = None
    seed: int = 0
    #: inject the incident (pool A slows down) or run the control without it
    incident: bool = True
    incident_factor: float = 2.5
    #: how long pool A stays slow; None: a quarter of the load (90 s of the default 360 s), so that
    #: the incident ends inside the load at any --duration (a fixed 90 s outlasted a 90 s run)
    incident_seconds: float | None = None
    slo_ms: float = 300.0
    #: the operator's loop interval (forecast.stepSeconds)
    step_seconds: int = 5
    cutback_step_percent: int = 10
    cutback_interval_seconds: int = 10
    cutback_stable_seconds: int = 20
    #: emulated model-load time of a pod
    startup_seconds: float = 8.0
    #: after the load ends, wait this long at most for an open cut-back to finish
    settle_seconds: float = 90.0
    name: str = "chat"
    profile: str = "demo-heavy"
    #: the operator's diagnosis windows (FORESCALE_DIAGNOSIS_*_SECONDS), scaled with the demo's clock: its loop runs
    #: every 5 s (production: 15 s) and Prometheus scrapes every 2 s, so the "now" window is the engine's 30 s / 3
    #: and "before" the issue's 10 minutes / 3
    diagnosis_now_seconds: int = 10
    diagnosis_before_seconds: int = 200

    def operator_env(self) -> dict[str, str]:
        """The operator's environment for this demo."""
        return {"FORESCALE_DIAGNOSIS_NOW_SECONDS": str(self.diagnosis_now_seconds),
                "FORESCALE_DIAGNOSIS_BEFORE_SECONDS": str(self.diagnosis_before_seconds)}

    def incident_length(self) -> float:
        """Seconds pool A stays slow."""
        return self.incident_seconds if self.incident_seconds is not None else self.duration_seconds / 4

    def incident_start(self) -> float:
        """A seeded random time in the middle third of the run (as the replay's default incident)."""
        third = self.duration_seconds / 3
        return round(random.Random(self.seed).uniform(third, 2 * third - min(self.incident_length(), third) / 2), 1)


def demo_resource(settings: DemoSettings, namespace: str) -> dict:
    """The InferenceDeployment the demo applies: two pools of emulated-GPU model servers."""

    def template(precision: str) -> dict:
        return {"spec": {"containers": [{
            "name": "server",
            "image": "forescale/model-server:dev",
            "args": ["serve", "--emulate-gpu", settings.profile, "--precision", precision, "--enable-faults"],
            "ports": [{"name": "http", "containerPort": 8000}],
            "resources": {"limits": {"nvidia.com/gpu": 1}},
        }]}}

    return {
        "apiVersion": "forescale.io/v1alpha1",
        "kind": "InferenceDeployment",
        "metadata": {"name": settings.name, "namespace": namespace},
        "spec": {
            "slo": {"targetLatencyMs": settings.slo_ms, "quantile": 0.99},
            "pools": {
                "a": {"minReplicas": 2, "maxReplicas": 8, "precision": "fp16", "template": template("fp16")},
                "b": {"minReplicas": 1, "maxReplicas": 4, "precision": "int8", "costWeight": 0.6, "template": template("int8")},
            },
            "warmReservePercent": 20,
            "forecast": {"horizonSeconds": 180, "stepSeconds": settings.step_seconds},
            "traffic": {
                "router": "gatewayapi",
                "parentRefs": [{"name": "demo-gateway"}],
                "emergencyWeightPercent": 30,
                "cutback": {"stepPercent": settings.cutback_step_percent,
                            "intervalSeconds": settings.cutback_interval_seconds,
                            "stableSeconds": settings.cutback_stable_seconds},
            },
            "emergency": {"triggerRatio": 2.0, "errorRatePercent": 5, "precisionFallback": True,
                          "minAgreement": 0.97, "cacheWarmup": True, "debugLogSeconds": 60},
        },
    }
