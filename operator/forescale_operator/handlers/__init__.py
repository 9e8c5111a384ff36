"""Plain async handlers, called by the thin kopf registration in `registration.py`."""
