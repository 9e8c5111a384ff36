"""The tick's report step: status (through status.py, the only writer), the operator's metrics, and the
settings a resource runs without, said once as Warning events.

- `reporter.py`: the decision, the forecast and its scores, the metrics' condition, into status and telemetry;
- `setting_problems.py`: no metric source, an ignored capacity annotation.
"""
