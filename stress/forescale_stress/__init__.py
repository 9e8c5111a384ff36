"""`forescale stress`: step load tests with fault injection."""
