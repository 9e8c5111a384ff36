"""Forescale reference model server."""
