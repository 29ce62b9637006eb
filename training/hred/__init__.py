"""The VHRED hierarchical encoder of ADEM and AutoJudge: tokenizer, model, pre-training, self-talk, export."""
