"""Benchmarks run by `make bench`; each prints side-by-side ratios measured in one run."""
