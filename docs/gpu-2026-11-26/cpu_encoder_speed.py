"""The MiniLM encoder on the lent machine's CPU (another CPU family than the development VM's), in
process: the committed int8 graph on ONNX Runtime, the same graph with float MatMuls
(`session.disable_quant_qdq`), and torch eager fp32 with all-MiniLM-L6-v2's configuration (random
weights: no weights reach that machine; the time does not depend on them). Texts are sentences of
this repository's docs, tokenised by the committed tokenizer, in calls of 96 bucketed by length as
the service does. Pinned to 2 cores (taskset) with 2 threads, as the issue's 2-core machine.

    PYTHONPATH=. taskset -c 0,1 python3 <this file> OUT_DIR    (from the repository root)
"""
from __future__ import annotations

import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from tokenizers import Tokenizer
from transformers import BertConfig, BertModel

from service.artifacts.batching import length_buckets

STORE = Path("model_store/minilm-l6")
THREADS = 2


def texts(n: int = 960) -> list[str]:
    found: list[str] = []
    for path in sorted(Path("docs").rglob("*.md")):
        for sentence in re.split(r"(?<=[.!?])\s+", path.read_text(encoding="utf-8")):
            sentence = " ".join(sentence.split())
            if 30 <= len(sentence) <= 160 and "|" not in sentence and "`" not in sentence:
                found.append(sentence.lower())
    return list(dict.fromkeys(found))[:n]


def rate(run_all: Callable[[], None], texts: int) -> float:
    """Texts a second: one warm-up pass, then the median of three timed passes."""
    run_all()
    times = []
    for _ in range(3):
        start = time.perf_counter()
        run_all()
        times.append(time.perf_counter() - start)
    return texts / statistics.median(times)


def ort_rate(session: ort.InferenceSession, ids: list[list[int]]) -> float:
    def run_all() -> None:
        for start in range(0, len(ids), 96):
            call = ids[start:start + 96]
            for batch in length_buckets([len(x) for x in call], 96, step=8):  # the service's own batching
                width = max(len(call[i]) for i in batch)
                feeds = {"input_ids": np.zeros((len(batch), width), np.int64),
                         "attention_mask": np.zeros((len(batch), width), np.int64)}
                for row, i in enumerate(batch):
                    feeds["input_ids"][row, :len(call[i])] = call[i]
                    feeds["attention_mask"][row, :len(call[i])] = 1
                session.run(None, feeds)
    return rate(run_all, len(ids))


def torch_rate(ids: list[list[int]]) -> float:
    torch.set_num_threads(THREADS)
    model = BertModel(BertConfig(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                                 intermediate_size=1536)).eval()

    def run_all() -> None:
        with torch.inference_mode():
            for start in range(0, len(ids), 32):  # sentence-transformers: batches of 32, padded to the longest
                call = ids[start:start + 32]
                width = max(len(x) for x in call)
                input_ids = torch.zeros(len(call), width, dtype=torch.long)
                mask = torch.zeros(len(call), width, dtype=torch.long)
                for row, x in enumerate(call):
                    input_ids[row, :len(x)] = torch.tensor(x)
                    mask[row, :len(x)] = 1
                hidden = model(input_ids=input_ids, attention_mask=mask).last_hidden_state
                m = mask.unsqueeze(-1).float()
                torch.nn.functional.normalize((hidden * m).sum(1) / m.sum(1), dim=-1)
    return rate(run_all, len(ids))


def session(extra: dict[str, str] | None = None) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    for key, value in (extra or {}).items():
        options.add_session_config_entry(key, value)
    return ort.InferenceSession(str(STORE / "encoder-int8.onnx"), options, providers=["CPUExecutionProvider"])


def main(out: Path) -> None:
    flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    model = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name"))
    units = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
             if f" {f}" in flags]
    tokenizer = Tokenizer.from_file(str(STORE / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=256)
    sample = texts()
    ids = [e.ids for e in tokenizer.encode_batch(sample)]
    result = {"cpu": model.split(":", 1)[1].strip(), "units": units, "onnxruntime": ort.__version__,
              "torch": torch.__version__, "texts": len(ids), "mean_pieces": round(float(np.mean([len(x) for x in ids])), 1),
              "threads": THREADS}
    print(json.dumps(result), flush=True)
    rates = {}
    for round_ in range(2):  # interleaved rounds
        for name, measure in (("onnx int8 (committed)", lambda: ort_rate(session(), ids)),
                              ("onnx int8, float MatMuls", lambda: ort_rate(session({"session.disable_quant_qdq": "1"}), ids)),
                              ("torch eager fp32, batch 32", lambda: torch_rate(ids))):
            rate = measure()
            rates.setdefault(name, []).append(rate)
            print(f"round {round_}: {name}: {rate:.1f} texts/s", flush=True)
    result["texts_per_s"] = {k: round(max(v), 1) for k, v in rates.items()}
    base = result["texts_per_s"]["torch eager fp32, batch 32"]
    result["vs_torch"] = {k: round(v / base, 2) for k, v in result["texts_per_s"].items()}
    print(json.dumps(result, indent=1), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cpu_encoder_speed.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
