"""`forescale stress`: open-loop step load tests with fault injection.

The package is a small pipeline: `schedule` (the step ramp and arrivals),
`loadgen` (the aiohttp sender that records samples), `runner` (steps, stop
conditions, the fault and degradation timeline), then pure analysis
(`percentiles`, `analysis`) and the outputs (`report`, `plot`). `cli` wires
them to `forescale stress`. See docs/stress.md for the definitions.
"""
