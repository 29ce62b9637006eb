"""The cross-encoder: all-MiniLM-L6-v2's BERT reading the pair, mean pooling, one linear score.

Its starting weights are rebuilt from the committed int8 graph (model_store/minilm-l6/encoder-int8.onnx):
the device has no copy of the packaged model, and that graph's float reading is what the CPU serves
(int8-float), so the rebuild starts from the served encoder's own arithmetic.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import torch
from torch import nn

# all-MiniLM-L6-v2's config.json
CONFIG = {"vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12,
          "intermediate_size": 1536, "max_position_embeddings": 512, "type_vocab_size": 2,
          "hidden_act": "gelu", "layer_norm_eps": 1e-12}
GRAPH_PREFIX = "inner."  # training/encoders/minilm/export.py's Pooled wrapper names the BERT `inner`


class CrossEncoder(nn.Module):
    """score = w · mean(BERT(pair) over its tokens) + b."""

    def __init__(self, dropout: float = 0.1) -> None:
        super().__init__()
        from transformers import BertConfig, BertModel

        self.bert = BertModel(BertConfig(**CONFIG, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout),
                              add_pooling_layer=False)
        self.head = nn.Linear(CONFIG["hidden_size"], 1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor,
                ) -> torch.Tensor:
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                           token_type_ids=token_type_ids).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        return self.head(pooled).squeeze(-1)


@functools.lru_cache(maxsize=2)
def weights_from_graph(path: Path) -> dict[str, np.ndarray]:
    """BERT's state dict from the int8 encoder graph: each DequantizeLinear's float reading, and each
    MatMul weight named by the bias its output is added to (`…query.bias` -> `…query.weight`, transposed)."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    stored = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    values: dict[str, np.ndarray] = {}
    for node in graph.node:
        if node.op_type == "DequantizeLinear" and node.input[0] in stored:
            q, scale, zero = (stored[n] for n in node.input[:3])
            axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
            shape = [1] * q.ndim
            shape[axis] = -1
            values[node.output[0]] = (q.astype(np.float32) - zero.reshape(shape)) * scale.reshape(shape)
    values.update({k: v for k, v in stored.items() if v.dtype == np.float32})
    adds: dict[str, str] = {}
    for node in graph.node:
        if node.op_type == "Add":
            bias = [n for n in node.input if n.endswith(".bias") and n in stored]
            other = [n for n in node.input if n not in stored]
            if bias and other:
                adds[other[0]] = bias[0]
    state: dict[str, np.ndarray] = {}
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in values and node.output[0] in adds:
            name = adds[node.output[0]][:-len(".bias")]
            state[f"{name}.weight"] = values[node.input[1]].T
    for name, value in values.items():
        if name.startswith(GRAPH_PREFIX) and not name.endswith(("_scale", "_zero", "_int8")):
            state.setdefault(name, value)
    return {k[len(GRAPH_PREFIX):]: np.ascontiguousarray(v) for k, v in state.items() if k.startswith(GRAPH_PREFIX)}


def from_graph(path: Path, dropout: float = 0.1, seed: int = 0) -> CrossEncoder:
    """A cross-encoder whose BERT holds the graph's weights (every one of them: a missing or extra name
    fails) and whose score head starts at zero weight, so every pair starts level."""
    torch.manual_seed(seed)
    model = CrossEncoder(dropout)
    state = {k: torch.from_numpy(v.copy()) for k, v in weights_from_graph(path).items()}
    expected = {k for k in model.bert.state_dict() if not k.endswith("position_ids")}
    if set(state) != expected:
        raise ValueError(f"{path}: weights missing {sorted(expected - set(state))[:5]}, "
                         f"unknown {sorted(set(state) - expected)[:5]}")
    model.bert.load_state_dict(state, strict=False)
    nn.init.zeros_(model.head.weight)
    nn.init.zeros_(model.head.bias)
    return model
