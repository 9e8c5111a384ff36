"""Forescale operator: kopf registration, spec parsing, decision engine, routers, actuators."""
