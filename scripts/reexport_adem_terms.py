"""Re-export the committed `adem` and `adem-minilm` heads so their graphs also return the score's terms.

The exporters write ADEM heads whose graphs return `s_unref` (c^T M r_hat) and `s_ref` (r^T N r_hat)
beside `score` (/score's `details`). Heads exported before that can be brought up to date without
retraining: each torch head is rebuilt from its own graph's initializers, checked to reproduce the old
graph's scores, exported with the current exporter (parity checked), checked again against the old
graph, and its manifest and card rewritten. A head that already returns its terms is left as it is.

    PYTHONPATH=. .venv/bin/python scripts/reexport_adem_terms.py [--store model_store]
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper

SCORE_ATOL = 1e-5  # old graph vs new graph: the same weights and arithmetic, so float rounding at most


def initializers(path: Path) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}


def run(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def same_scores(old: Path, new: Path, feeds_list: list[dict[str, np.ndarray]]) -> float:
    worst = 0.0
    for feeds in feeds_list:
        worst = max(worst, float(np.abs(run(old, feeds)["score"] - run(new, feeds)["score"]).max()))
    if worst > SCORE_ATOL:
        raise SystemExit(f"{new.name}: the re-exported graph's scores differ from the committed one's by {worst:.2e}")
    return worst


def already_done(path: Path) -> bool:
    """The script is run once: a graph that already returns s_ref was re-exported (or trained since)."""
    if "s_ref" in [o.name for o in onnx.load(str(path)).graph.output]:
        print(f"{path.parent.name}: {path.name} already returns its terms; left as it is")
        return True
    return False


def manifest_fields(folder: Path) -> dict:
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    keep = ("version", "kind", "scorer", "score_range", "requires", "tokenizer", "uses", "options", "config", "card")
    return {key: manifest[key] for key in keep if manifest.get(key) is not None}


def classic(folder: Path) -> None:
    from service.artifacts.manifest import write_manifest
    from training.adem.model import ADEMHead, ServedADEM
    from training.adem.card import adem_details
    from training.core.onnx_export import PARITY_ATOL, export_head, head_examples

    path = folder / "adem_head.onnx"
    if already_done(path):
        return
    weights = initializers(path)
    (projection,) = [v for k, v in weights.items() if k.startswith("onnx::MatMul")]  # components.T, folded
    head = ADEMHead(weights["mean"].copy(), projection.T.copy(), "adem", float(weights["alpha"]), float(weights["beta"]))
    head.M.data.copy_(torch.from_numpy(weights["M"].copy()))
    head.N.data.copy_(torch.from_numpy(weights["N"].copy()))
    feeds_list = [dict(zip(["c", "r_hat", "r"], [x.numpy() for x in example]))
                  for example in head_examples(head.mean.shape[0], 3, seed=7)]
    with torch.no_grad():
        for feeds in feeds_list:
            torch_scores = head(*[torch.from_numpy(feeds[k]) for k in ("c", "r_hat", "r")]).numpy()
            if np.abs(torch_scores - run(path, feeds)["score"]).max() > PARITY_ATOL:
                raise SystemExit("adem: the head rebuilt from the graph does not reproduce its scores")
    with tempfile.TemporaryDirectory() as stage:
        served = ServedADEM(head)
        parity = export_head(served, 3, ["c", "r_hat", "r"], Path(stage), path.name, head.mean.shape[0],
                             lambda *_: None, outputs=ServedADEM.OUTPUTS, scales=served.scales())
        worst = same_scores(path, Path(stage) / path.name, feeds_list)
        shutil.copyfile(Path(stage) / path.name, path)
    fields = manifest_fields(folder)
    fields["config"]["parity_max_abs_diff"] = parity
    fields["card"]["details"] = adem_details(float(head.alpha), float(head.beta))
    write_manifest(folder, name=folder.name, **fields)
    readme = (folder / "README.md").read_text(encoding="utf-8")
    readme, count = re.subn(
        r"and holds the PCA projection, M, N, alpha and beta\. ONNX vs torch max abs difference: \{[^}]*\}\.",
        "and holds the PCA projection, M, N, alpha and beta. It returns `score` and its two terms, `s_unref`\n"
        "= c^T M r_hat and `s_ref` = r^T N r_hat (in the PCA space, before alpha and beta), which `/score`\n"
        "gives in `details`: before the soft bound, score = (s_unref + s_ref - alpha) / beta.\n"
        f"ONNX vs torch max abs difference, in score units (the terms divided by beta): {parity}.", readme)
    if count != 1:
        raise SystemExit("adem/README.md: its Inputs paragraph is not the one training/adem/card.py writes")
    (folder / "README.md").write_text(readme, encoding="utf-8")
    print(f"adem: re-exported, scores within {worst:.1e} of the committed graph's; parity {parity}")


def minilm(folder: Path) -> None:
    from service.artifacts.manifest import write_manifest
    from training.minilm.export import _check_parity, export_head
    from training.minilm.model import AdemHead
    from training.core.minilm_cards import DETAILS, write_readme

    path = folder / "head.onnx"
    if already_done(path):
        return
    fields = manifest_fields(folder)
    head = AdemHead(pooling=fields["config"]["pooling"])
    weights = initializers(path)
    state = head.state_dict()
    missing = sorted(set(state) - set(weights))
    if missing:
        raise SystemExit(f"adem-minilm: the graph holds no {missing}")
    head.load_state_dict({k: torch.from_numpy(weights[k].copy()) for k in state})
    head.eval()
    rng = np.random.default_rng(7)
    feeds_list = []
    for batch, turns in ((1, 1), (3, 5), (8, 2)):
        def unit(*shape: int) -> np.ndarray:
            x = rng.standard_normal(shape)
            return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)

        mask = np.ones((batch, turns), np.float32)
        mask[0, 1:] = 0
        feeds_list.append({"context": unit(batch, turns, 384), "context_mask": mask,
                           "response": unit(batch, 384), "reference": unit(batch, 384)})
    with tempfile.TemporaryDirectory() as stage:
        new = Path(stage) / path.name
        export_head(head, new)
        _check_parity(head, new)
        worst = same_scores(path, new, feeds_list)
        shutil.copyfile(new, path)
    fields["config"].update(alpha=float(head.alpha.detach()), beta=float(head.beta.detach()))
    fields["card"]["details"] = DETAILS["adem-minilm"].format(**fields["config"])
    write_readme(folder, write_manifest(folder, name=folder.name, **fields))
    print(f"adem-minilm: re-exported, scores within {worst:.1e} of the committed graph's")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, default=Path("model_store"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    classic(args.store / "adem")
    minilm(args.store / "adem-minilm")


if __name__ == "__main__":
    main()
