"""A tiny MPNet (random weights, the real architecture and tokenizer) exported by the mpnet-base exporter
in seconds: the stronger encoder tier's whole path (export, parity, serving) without its 436 MB."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOKENIZER = REPO / "model_store" / "mpnet-base" / "tokenizer.json"


def tiny_mpnet(folder: Path) -> Path:
    """A randomly initialised 2-layer, 32-wide MPNet with all-mpnet-base-v2's tokenizer, saved as a model folder."""
    import torch
    from transformers import MPNetConfig, MPNetModel

    torch.manual_seed(0)
    config = MPNetConfig(vocab_size=30527, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=514)
    MPNetModel(config).save_pretrained(folder)
    shutil.copyfile(TOKENIZER, folder / "tokenizer.json")
    # sentence-transformers' truncation, as the real model's folder says it (its parity reference)
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 384, "do_lower_case": False}))
    return folder


def tiny_component(root: Path, int8: bool = False) -> Path:
    """root/store/mpnet-base built from a tiny MPNet by training.encoders.mpnet.export (parity checks included)."""
    from training.encoders.mpnet.export import LONG_REPETITION, PARITY_TEXTS, export_component

    model = tiny_mpnet(root / "tiny-mpnet")
    out = root / "store" / "mpnet-base"
    # The 384-piece repetition is left out: there this random 32-wide model's graph gives cosine .9993 with
    # sentence-transformers (the real model's 1.0), under the fp32 floor the export holds the real one to.
    export_component(model, out, int8=int8, texts=tuple(t for t in PARITY_TEXTS if t != LONG_REPETITION))
    return out
