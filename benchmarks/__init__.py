"""Benchmarks and load tests of the service (make bench, make loadtest): development tools, not shipped
(pyproject.toml packages service*, the images copy service/ only); aiohttp is a dev requirement."""
