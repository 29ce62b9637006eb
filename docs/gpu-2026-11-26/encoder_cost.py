"""What the re-ranking encoders cost on a GPU: all-MiniLM-L6-v2's and all-mpnet-base-v2's architectures
in PyTorch eager on CUDA, for the shapes of `make bench`'s re-ranking row (3 context turns and 32
candidates, their word-piece counts as both tokenizers give them) and one item.

Random weights of the published configurations: the time of a transformer does not depend on its
weights, and no weights can reach the lent machine. This is the encoder's arithmetic, not the served
path (ONNX Runtime's CUDA provider, HTTP, the heads), which needs onnxruntime-gpu there.

    python3 <this file> OUT_DIR    (from the repository root)
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import torch
from transformers import BertConfig, BertModel, MPNetConfig, MPNetModel

# `make bench`'s /rerank body (service/bench.py: rerank_body), tokenised by model_store's tokenizers
# (both give these counts, [CLS] and [SEP] included).
RERANK_LENGTHS = [12, 20, 11] + [14, 13, 11, 24] * 8
ONE_ITEM_LENGTHS = [12, 20, 14]  # two context turns and a reply
MODELS = {
    "all-MiniLM-L6-v2": lambda: BertModel(BertConfig(vocab_size=30522, hidden_size=384, num_hidden_layers=6,
                                                     num_attention_heads=12, intermediate_size=1536)),
    "all-mpnet-base-v2": lambda: MPNetModel(MPNetConfig(vocab_size=30527, hidden_size=768, num_hidden_layers=12,
                                                        num_attention_heads=12, intermediate_size=3072)),
}


def batch(lengths: list[int], device: str) -> dict[str, torch.Tensor]:
    width = max(lengths)
    ids = torch.randint(1000, 20000, (len(lengths), width))
    mask = torch.zeros(len(lengths), width, dtype=torch.long)
    for row, n in enumerate(lengths):
        mask[row, :n] = 1
    return {"input_ids": ids.to(device), "attention_mask": mask.to(device)}


def encode(model: torch.nn.Module, feeds: dict[str, torch.Tensor]) -> torch.Tensor:
    """Mean pooling over the mask and unit length, as sentence-transformers does for both models."""
    hidden = model(**feeds).last_hidden_state
    mask = feeds["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=-1)


def timed(model: torch.nn.Module, feeds: dict[str, torch.Tensor], repeats: int = 200) -> dict[str, float]:
    with torch.inference_mode():
        for _ in range(20):
            encode(model, feeds)
        torch.cuda.synchronize()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            encode(model, feeds)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {"p50_ms": round(statistics.median(times), 3), "p99_ms": round(times[int(0.99 * len(times)) - 1], 3)}


def main(out: Path) -> None:
    torch.backends.cuda.matmul.allow_tf32 = False  # the service asks ONNX Runtime for use_tf32=0
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    device = "cuda"
    results = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": []}
    print(results["gpu"], "torch", torch.__version__, flush=True)
    for name, build in MODELS.items():
        model = build().eval().to(device)
        for dtype in (torch.float32, torch.float16):
            model = model.to(dtype)
            for shape, lengths in (("rerank 3 turns + 32 candidates, one batch", RERANK_LENGTHS),
                                   ("one item (3 texts)", ONE_ITEM_LENGTHS)):
                row = {"model": name, "dtype": str(dtype).removeprefix("torch."), "shape": shape,
                       "texts": len(lengths), **timed(model, batch(lengths, device))}
                results["rows"].append(row)
                print(json.dumps(row), flush=True)
            many = [17] * 256  # throughput: 256 texts of the dev turns' mean length
            row = {"model": name, "dtype": str(dtype).removeprefix("torch."), "shape": "256 texts of 17 pieces",
                   "texts": 256, **timed(model, batch(many, device), repeats=50)}
            row["texts_per_s"] = round(256 / row["p50_ms"] * 1000)
            results["rows"].append(row)
            print(json.dumps(row), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "encoder_cost.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
