"""The lowest layer: a store folder's manifest and files, and the ONNX Runtime sessions that read them."""
