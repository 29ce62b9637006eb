"""The VHRED hierarchical encoder of ADEM and AutoJudge: tokenizer, model, pre-training, export (hred-encoder)."""
