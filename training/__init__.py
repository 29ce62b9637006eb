"""dialscore's offline training package (PyTorch). The service never imports this package."""
import service  # noqa: F401 - first: ONNX Runtime's telemetry is off before any export checks a graph
