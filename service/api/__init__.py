"""The HTTP API: blueprints (health, scoring, analysis) that parse the body, call the data plane
(dataplane.py) and serialise; the body reader, schemas, limits, middleware and OpenAPI document."""
