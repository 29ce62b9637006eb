"""The encoders every metric reads: the VHRED encoder (hred-encoder), MiniLM (minilm-l6) and MPNet (mpnet-base):
pre-training, ONNX export, quantisation and the embedding caches of training text."""
