"""Forescale's shared service-time profiles: the ground floor under the model
server, the simulator, the operator and the predictor's training script.

- `precision`: the precisions every component accepts and the service-time
  factor of each relative to fp16 (and its inverse, the relative speed).
- `service_time`: the calibrated encoder and decoder profiles, the catalogue
  looked up by name, and the closed-form latency a profile implies.

Standard library and numpy only: importing it loads neither torch nor any
other Forescale package (import-linter contract `profiles-ground-floor`).
"""
