"""What the service tells its operators: Prometheus metrics, JSON logs and OpenTelemetry traces."""
