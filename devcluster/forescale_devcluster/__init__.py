"""Local stand-in for a Kubernetes cluster, used by tests and `forescale demo`."""
