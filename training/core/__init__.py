"""What every model family shares: command-line types, staging, progress, ONNX export, the card template."""
