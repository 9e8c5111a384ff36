"""The tick's act step: carry out the engine's Decision, and diagnose beside the relief.

- `executor.py`: scale, route weights, the model servers' admin calls, the
  incident snapshot, each action's event as it happens;
- `admin_token.py`: the admin token the calls carry, read from its Secret;
- `incident_diagnosis.py`: the diagnosis checklist (diagnosis/) run as a task of
  its own on the tick that starts a relief, never awaited by it.

Nothing is imported here: the tick names these modules without loading the others.
"""
