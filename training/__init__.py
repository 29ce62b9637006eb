"""dialscore's offline training package (PyTorch). The service never imports this package."""
import os

# ONNX Runtime's usage telemetry off, as service/__init__.py has it; set here too, since the device's
# training script imports no part of the service.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
