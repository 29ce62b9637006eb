"""all-MiniLM-L6-v2 (minilm-l6): ONNX export, w8a8 quantisation, the embedding cache of training text and the
reference speed of sentence-transformers."""
