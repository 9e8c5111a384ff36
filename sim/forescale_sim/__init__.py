"""Forescale replay simulator."""
