"""dialscore's service package: the HTTP service, its scorers and the batch commands."""
import os

# ONNX Runtime (1.29 and later) uploads usage telemetry from Linux too, and writes a device id and an
# event cache under ~/.cache/Microsoft, unless this is set when its environment is first made (it is
# read once): the service sends nothing out, and an operator who wants it sent sets it to 0.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
