"""The policies a replay compares: the peers (HPA, KEDA, KPA), static peak
provisioning, the oracle, and Forescale's engine. One per module; build them
with `policies.factory.make_policy`."""
