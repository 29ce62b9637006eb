"""What every model family shares: command-line types, staging, progress, checkpoints, ONNX export, the
classic heads' fit, the exportable BiGRU and the model-card template."""
