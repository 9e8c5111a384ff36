"""A small Kubernetes API client over plain dict bodies (no typed models)."""
