"""`python -m training export-rerank`: what the device call returned (train.py's weight parts and results.json)
to a store folder: the cross-encoder as one ONNX graph with int8 weights (int8-float), tokenizer, manifest
and card. Parity with torch is checked before the folder is written.

Serving it needs a cross-encoder scorer the service does not have yet (issue 49's item 3), so the folder
goes under build/ unless another is named.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

from service.artifacts.manifest import read_manifest, write_manifest
from training.core.card import Templates, kind_line, render, render_fields, write_card
from training.core.cli import output_dir
from training.encoders.minilm.export import weight_only_int8
from training.rerank.model import CrossEncoder
from training.rerank.pack import TOKENIZER
from training.rerank.pieces import CLS, SEP
from training.rerank.train import RESULTS

NAME = "rerank-minilm"
VERSION = "2026.11.1"
FILE = "cross-encoder-int8.onnx"
FILE_LIMIT = 25 * 2**20  # a committed store file's size limit
TEMPLATES = Templates(__file__)
FLOAT_TOLERANCE = 1e-4  # the float graph against torch, absolute, on scores of unit scale
INT8_TOLERANCE = 0.05  # the int8-weight graph (as ONNX Runtime's CPU provider runs it) against torch


def load_returned(folder: Path) -> tuple[CrossEncoder, dict]:
    """The model trained on every group, from its parts, checked against results.json's sha256."""
    from safetensors.torch import load

    results = json.loads((folder / RESULTS).read_text(encoding="utf-8"))
    weights = results.get("weights")
    if not weights:
        raise ValueError(f"{folder}/{RESULTS}: no weights (the model on every group did not finish)")
    data = b"".join((folder / part).read_bytes() for part in weights["parts"])
    digest = hashlib.sha256(data).hexdigest()
    if digest != weights["sha256"]:
        raise ValueError(f"{folder}: the parts' sha256 {digest} is not {weights['sha256']} (a part is missing or cut)")
    model = CrossEncoder(dropout=0.0)
    state = {k: v.float() for k, v in load(data).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if [k for k in missing if not k.endswith("position_ids")] or unexpected:
        raise ValueError(f"{folder}: weights missing {missing[:5]}, unknown {unexpected[:5]}")
    return model.eval(), results


class Scoring(nn.Module):
    """The graph's signature: input_ids, attention_mask, token_type_ids -> score."""

    def __init__(self, model: CrossEncoder) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor,
                ) -> torch.Tensor:
        return self.model(input_ids, attention_mask, token_type_ids)


def example_inputs(rows: int = 3, width: int = 21, seed: int = 0) -> dict[str, torch.Tensor]:
    """Pairs of random word pieces in the trained layout, of several lengths (padding included)."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((rows, width), np.int64)
    types = np.zeros((rows, width), np.int64)
    mask = np.zeros((rows, width), np.int64)
    for i in range(rows):
        length = width - 5 * i if width - 5 * i >= 6 else width
        cut = length // 2
        ids[i, :length] = rng.integers(1000, 30000, length)
        ids[i, 0], ids[i, cut], ids[i, length - 1] = CLS, SEP, SEP
        types[i, cut + 1:length] = 1
        mask[i, :length] = 1
    return {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask),
            "token_type_ids": torch.from_numpy(types)}


def export_graph(model: CrossEncoder, path: Path) -> Path:
    """The float graph (legacy exporter, opset 17; batch and time axes symbolic)."""
    inputs = example_inputs()
    axes = {name: {0: "batch", 1: "time"} for name in inputs}
    with torch.no_grad():
        torch.onnx.export(Scoring(model).eval(), tuple(inputs.values()), str(path), dynamo=False, opset_version=17,
                          input_names=list(inputs), output_names=["score"],
                          dynamic_axes={**axes, "score": {0: "batch"}})
    return path


def parity(model: CrossEncoder, path: Path, basic: bool) -> float:
    """Largest |ONNX - torch| over example batches of several shapes (batch 1 and a long one among them);
    `basic`: ONNX Runtime's basic optimisation (float arithmetic), else what the service runs on the CPU."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_BASIC if basic
                                        else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    worst = 0.0
    for rows, width, seed in ((1, 9, 1), (4, 33, 2), (2, 128, 3)):
        inputs = example_inputs(rows, width, seed)
        with torch.no_grad():
            expected = model(**inputs).numpy()
        got = session.run(["score"], {k: v.numpy() for k, v in inputs.items()})[0]
        worst = max(worst, float(np.abs(got - expected).max()))
    return worst


def figures(results: dict, path: Path, argv: list[str]) -> dict:
    """The card's figures from results.json."""
    every = next(m for m in results["models"] if m["model"] == "all")
    config = results["config"]
    terms = [f"MSE to the ratings standardised per set (weight {config['rating_weight']})",
             f"listwise softmax over each next-turn group (weight {config['listwise_weight']})"]
    if every.get("teacher_column"):
        terms.append(f"MSE to the teacher's column '{every['teacher_column']}' (weight {config['teacher_weight']})")
    rows = ["| epoch | loss: rating | listwise | teacher | dev Pearson | dev pairwise | seconds |",
            "|---|---|---|---|---|---|---|"]
    for epoch in every["epochs"]:
        dev = epoch.get("dev", {})
        cells = [_cell(dev.get("mean_pearson")), _cell(dev.get("mean_pairwise"))]
        loss = epoch["loss"]
        rows.append(f"| {epoch['epoch']} | {loss['rating']:.4f} | {loss['listwise']:.4f} | {loss['teacher']:.4f} | "
                    f"{' | '.join(cells)} | {epoch['seconds']} |")
    folds = {name: {s: _cell(r) for s, r in oof["pearson"].items()} for name, oof in results["out_of_fold"].items()}
    device = results["device"]
    return {"name": path.parent.name, "rated_rows": every["rated_rows"], "next_turn_groups": every["next_turn_groups"],
            "objective": "; ".join(terms), "device": f"{device.get('gpu', device['device'])}, torch {device['torch']}"
            + (", bf16 autocast" if device["device"].startswith("cuda") else ", float32"),
            "epochs": f"{len(every['epochs'])} of {config['epochs']}", "epochs_table": "\n".join(rows),
            "training_time": f"{results['seconds']} s for {len(results['models'])} models "
                             f"({every['pairs_per_second']} pairs/s), skipped: {results['skipped'] or 'none'}",
            "out_of_fold": json.dumps(folds) if folds else "none trained", "file": FILE, "precision": "int8-float",
            "file_mib": round(path.stat().st_size / 2**20, 2),
            "reproduce": "python -m training pack-rerank\n"
                         "(then training/rerank/train.py on the lent GPU)\n"
                         f"python -m training export-rerank {' '.join(argv)}"}


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def export(returned: Path, out: Path, argv: list[str]) -> dict:
    """Write the store folder `out` (replaced whole, once every check passed); returns the parity figures."""
    model, results = load_returned(returned)
    with tempfile.TemporaryDirectory() as scratch:
        float_graph = export_graph(model, Path(scratch) / "float.onnx")
        float_error = parity(model, float_graph, basic=True)
        if float_error > FLOAT_TOLERANCE:
            raise ValueError(f"the float graph is {float_error:.2e} from torch (more than {FLOAT_TOLERANCE})")
        staged = Path(scratch) / out.name  # a store folder is named as its model
        staged.mkdir()
        int8 = weight_only_int8(float_graph, staged / FILE)
        float_graph.unlink()
        int8_error = parity(model, int8, basic=False)
        if int8_error > INT8_TOLERANCE:
            raise ValueError(f"the int8 graph is {int8_error:.2e} from torch (more than {INT8_TOLERANCE})")
        if int8.stat().st_size > FILE_LIMIT:
            raise ValueError(f"{FILE} is {int8.stat().st_size} bytes, over the store's {FILE_LIMIT}")
        shutil.copyfile(TOKENIZER, staged / "tokenizer.json")
        found = figures(results, int8, argv)
        config = {"file": FILE, "precision": "int8-float", "max_length": results["config"]["max_length"],
                  "max_reply": results["config"]["max_reply"], "max_turns": results["pack"]["max_turns"],
                  "layout": "[CLS] context turns joined by [SEP] [SEP] reply [SEP]; token type 1 on the reply"}
        manifest = write_manifest(staged, name=out.name, version=VERSION, kind="unreferenced", scorer="cross-encoder",
                                  score_range=(-10.0, 10.0), tokenizer="tokenizer.json", config=config,
                                  card=render_fields(TEMPLATES.card(NAME), found))
        write_card(staged, render(TEMPLATES.readme(NAME), {**found, **manifest.card, "kind_line": kind_line(manifest)}))
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(staged, out)
    read_manifest(out)
    checked = {"float_max_abs": float_error, "int8_max_abs": int8_error, "bytes": (out / FILE).stat().st_size}
    print(json.dumps(checked))
    return checked


def returned_folder(text: str) -> Path:
    path = Path(text)
    if not (path / RESULTS).is_file():
        raise argparse.ArgumentTypeError(f"{path} holds no {RESULTS} (the device call's files)")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training export-rerank", description=__doc__)
    parser.add_argument("returned", type=returned_folder, help="the folder the device call's files were fetched to")
    parser.add_argument("--out", type=output_dir, default=Path("build") / NAME, help="the store folder to write")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    export(args.returned, args.out, argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
