"""ONNX export shared by every family: one file per graph (legacy exporter, opset 17), variable axes
checked to be symbolic, ONNX Runtime within `PARITY_ATOL` of torch at several shapes before any write."""
from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

from training.core.cli import SetupError

PARITY_ATOL = 1e-4
OPSET = 17
log = logging.getLogger("training.export")


def export_onnx(module: nn.Module, example: tuple[torch.Tensor, ...], path: Path,
                input_names: list[str], output_names: list[str],
                dynamic_axes: dict[str, dict[int, str]]) -> Path:
    """Export `module` (in eval mode) to one ONNX file with symbolic axes; returns the path.

    Example inputs should be at least 2 on every variable axis: the tracer may freeze an axis it
    sees at 1 into a constant. The saved graph is checked to have symbolic names on every axis
    listed in `dynamic_axes`.
    """
    module.eval()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, example, str(path), input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes, opset_version=OPSET, dynamo=False, do_constant_folding=True)
    graph = onnx.load(str(path)).graph
    for value in list(graph.input) + list(graph.output):
        for axis in dynamic_axes.get(value.name, {}):
            dim = value.type.tensor_type.shape.dim[axis]
            if not dim.dim_param:
                raise RuntimeError(f"{path.name}: axis {axis} of {value.name} was frozen at {dim.dim_value}")
    return path


def check_parity(module: nn.Module, path: Path, examples: Sequence[tuple[torch.Tensor, ...]],
                 input_names: list[str], atol: float = PARITY_ATOL, scales: Sequence[float] | None = None) -> float:
    """Largest |ONNX Runtime - torch| over every output of every example; raises above `atol`.

    `scales` divides each output's difference first: ADEM's terms are its score times beta, so their float32
    rounding is measured in score units, as the score's is."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    module.eval()
    worst = 0.0
    for example in examples:
        with torch.no_grad():
            expected = module(*example)
        expected = expected if isinstance(expected, (tuple, list)) else (expected,)
        got = session.run(None, {name: t.numpy() for name, t in zip(input_names, example)})
        refuse_non_finite(got, path)  # max() below would pass NaN over silently
        for k, (e, g) in enumerate(zip(expected, got)):
            scale = abs(scales[k]) if scales else 1.0
            worst = max(worst, float(np.max(np.abs(e.numpy() - g))) / scale if e.numel() else 0.0)
    if worst > atol:
        raise RuntimeError(f"{Path(path).name}: ONNX Runtime differs from torch by {worst:.2e} (> {atol:.0e})")
    return worst


def refuse_non_finite(outputs: Sequence[np.ndarray], path: Path) -> None:
    """A parity check's ONNX outputs must be finite: a run with NaN weights gives NaN everywhere alike."""
    if not all(np.all(np.isfinite(output)) for output in outputs):
        raise SetupError(f"{Path(path).name}: the graph gives non-finite outputs (a run with NaN weights?)")


def ragged_examples(shapes: Sequence[tuple[int, int]], values: Callable[[int, int, torch.Generator], torch.Tensor],
                    seed: int = 0, zero_padding: bool = True) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(values, lengths) per (batch, width) shape: lengths drawn in 1..width with the first row full,
    then `values(batch, width, generator)`, whose steps past each row's length are zeroed."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for batch, width in shapes:
        lengths = torch.randint(1, width + 1, (batch,), generator=g)
        lengths[0] = width
        x = values(batch, width, g)
        if zero_padding:
            x[torch.arange(width).unsqueeze(0) >= lengths.unsqueeze(1)] = 0
        out.append((x, lengths))
    return out


def head_examples(dim: int, count: int, seed: int = 0) -> list[tuple[torch.Tensor, ...]]:
    """`count` random inputs [batch, dim] per batch size, for a head over encoder vectors."""
    g = torch.Generator().manual_seed(seed)
    return [tuple(torch.randn((batch, dim), generator=g) for _ in range(count)) for batch in (1, 2, 7, 300)]


def fresh_folder(folder: Path) -> Path:
    """`folder`, made, without the artifacts of a previous export (the README is rewritten too)."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in folder.iterdir():
        if path.is_file() and path.suffix in (".onnx", ".npy", ".json"):
            path.unlink()
    return folder


def export_head(head: nn.Module, n_inputs: int, input_names: list[str], folder: Path, filename: str,
                dim: int, write: Callable[[Path, dict[str, float]], None],
                outputs: Sequence[str] = ("score",), scales: Sequence[float] | None = None) -> dict[str, float]:
    """Export a scoring head over encoder vectors (inputs [batch, dim] each; outputs [batch] each,
    `score` first; `scales` as check_parity's), then `write(folder, parity)` its manifest and card."""
    folder = fresh_folder(Path(folder))
    examples = head_examples(dim, n_inputs)
    export_onnx(head, examples[1], folder / filename, input_names, list(outputs),
                {n: {0: "batch"} for n in [*input_names, *outputs]})
    parity = {filename: check_parity(head, folder / filename, examples, input_names, scales=scales)}
    write(folder, parity)
    log.info("exported %s: parity %s", folder, parity)
    return parity
