"""The model store: manifests and their files, ONNX Runtime sessions, and the ModelStore that loads them."""
