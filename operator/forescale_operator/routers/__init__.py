"""Routers: how traffic is split between the pools (Gateway API, Istio, or not at all)."""
