"""The tick's observe step: what the cluster holds for one resource, read from kopf's indexes.

- `seen.py`: both pools' Deployments, the Services and the route's split, and
  the readiness part of status they imply (`observe`, `services_intact`, `record`);
- `admin_readiness.py`: whether both pools' pods can authenticate the playbook's
  admin calls (AdminReady), from their templates and the token's Secret.
"""

from .seen import Observation, observe, record, services_intact

__all__ = ["Observation", "observe", "record", "services_intact"]
