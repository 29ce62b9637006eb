"""What every metric shares: command-line types, staging, progress, checkpoints, ONNX export, the classic heads'
fit, the exportable BiGRU, the heads on sentence vectors (parts, loop, next-turn pre-training) and the cards'
templates."""
