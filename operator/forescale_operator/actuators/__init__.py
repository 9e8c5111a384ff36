"""Actuators: the only code that changes the cluster's children. One file per child kind."""

from .facade import Actuators

__all__ = ["Actuators"]
