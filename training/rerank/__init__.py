"""A MiniLM cross-encoder over (context, reply), fine-tuned on one GPU call: the packed data (`pack`),
the training script the device runs (`train`), and the export of what comes back (`export`)."""
