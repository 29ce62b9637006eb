"""The MiniLM graph with int8 weights and per-token int8 activations ("w8a8"), for integer dot products.

Every MatMul over a constant 2-D weight becomes QuantizeLinear (one scale per token, from its own values)
-> MatMulIntegerToFloat -> times the token's scale, so a token's arithmetic never sees another token or
text: a vector does not depend on its batch, to the bit. SmoothQuant (Xiao et al. 2023) moves each input
channel's range into the weight's row by a power of two (both scalings exact); GELU outputs are
shifted non-negative to use all 256 unsigned levels. Weights are int8 per output column, each pair of
rows bounded by PAIR_BOUND, so the integer products are exact on every CPU's dot-product instructions.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np

GELU_FLOOR = -0.1700  # min over x of x * Phi(x) is -0.16997 (at x = -0.7518)
PAIR_BOUND = 128  # 255 * 128 = 32,640 <= 32,767: a u8 x s8 pair never saturates int16
ALPHA = 0.65  # SmoothQuant's migration strength for the inputs of attention and of the first feed-forward layer
ALPHA_GELU = 0.5  # and for GELU outputs, the second feed-forward layer's input
OPSET = 21  # blocked QuantizeLinear (one scale per token) needs opset 21
TABLE_ROWS_MIN = 1 << 20  # Gather tables at least this large (the word pieces') are stored int8 by row


def pair_bounded_int8(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(K, N) float weights as int8 `q` and per-column float32 `scale` (weights ~ q * scale) with
    |q[2i, n]| + |q[2i+1, n]| <= PAIR_BOUND and |q| <= 127."""
    w = np.asarray(weights, dtype=np.float64)
    if w.shape[0] % 2:
        w = np.vstack([w, np.zeros((1, w.shape[1]))])
    pair = np.abs(w[0::2]) + np.abs(w[1::2])
    scale = np.maximum(pair.max(axis=0) / PAIR_BOUND, np.abs(w).max(axis=0) / 127.0)
    scale[scale == 0] = 1.0
    exact = w / scale
    q = np.clip(np.round(exact), -127, 127)
    # Rounding can lift a pair to PAIR_BOUND + 1 or + 2: take one step off the member rounded furthest up.
    for _ in range(2):
        over = np.abs(q[0::2]) + np.abs(q[1::2]) > PAIR_BOUND
        if not over.any():
            break
        first_up = (np.abs(q[0::2]) - np.abs(exact[0::2])) >= (np.abs(q[1::2]) - np.abs(exact[1::2]))
        for half, pick in ((slice(0, None, 2), over & first_up), (slice(1, None, 2), over & ~first_up)):
            part = q[half]
            part[pick] -= np.sign(part[pick])
            q[half] = part
    assert (np.abs(q[0::2]) + np.abs(q[1::2]) <= PAIR_BOUND).all()
    return q[: weights.shape[0]].astype(np.int8), scale.astype(np.float32)


def smoothing(peaks: np.ndarray, weight_peaks: np.ndarray, alpha: float) -> np.ndarray:
    """SmoothQuant's per-channel factors, in float64."""
    peaks = np.maximum(np.asarray(peaks, np.float64), 1e-5)
    weight_peaks = np.maximum(np.asarray(weight_peaks, np.float64), 1e-5)
    return peaks ** alpha / weight_peaks ** (1.0 - alpha)


def activation_peaks(model_dir: Path, texts: Iterable[str], max_length: int, batch: int = 32) -> list[tuple[np.ndarray, np.ndarray]]:
    """For every nn.Linear of the transformer: its (K, N) float32 weight as the graph holds it, and the
    largest |input| of each of its K channels over the real tokens of `texts`, run in float64 so that
    the factors, hence the file, come out the same on any CPU the export runs on."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(1)  # one summation order, whatever the machine's cores
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    bert = AutoModel.from_pretrained(str(model_dir)).double().eval()
    linears = [m for m in bert.modules() if isinstance(m, torch.nn.Linear)]
    peaks = {id(m): torch.zeros(m.in_features, dtype=torch.float64) for m in linears}
    real: list[torch.Tensor] = []

    def hook(module, inputs, _output) -> None:
        values = inputs[0].abs()
        values = values[real[0]] if values.dim() == 3 else values  # (tokens, K): padding left out
        peaks[id(module)] = torch.maximum(peaks[id(module)], values.reshape(-1, module.in_features).amax(dim=0))

    handles = [m.register_forward_hook(hook) for m in linears]
    ordered = sorted(dict.fromkeys(texts), key=len)  # batches of similar length: little padding to run
    try:
        with torch.no_grad():
            for start in range(0, len(ordered), batch):
                encoded = tokenizer(ordered[start:start + batch], padding=True, truncation=True,
                                    max_length=max_length, return_tensors="pt")
                real[:] = [encoded["attention_mask"].bool()]
                bert(**encoded)
    finally:
        for handle in handles:
            handle.remove()
    return [(m.weight.detach().to(torch.float32).numpy().T.copy(), peaks[id(m)].numpy()) for m in linears]


def quantise(fp32: Path, target: Path, peaks: list[tuple[np.ndarray, np.ndarray]],
             alpha: float = ALPHA, alpha_gelu: float = ALPHA_GELU) -> Path:
    """Write the w8a8 copy of the float graph `fp32` (see the module's docstring) to `target`.

    `peaks` pairs each MatMul's (K, N) weight with its input's channel peaks (activation_peaks); a
    MatMul is matched to its pair by the weight's exact values, so no naming scheme is assumed.
    MatMuls that read one tensor (a layer's query, key and value) share its quantisation."""
    import onnx
    from onnx import helper, numpy_helper, version_converter

    model = version_converter.convert_version(onnx.load(str(fp32)), OPSET)
    graph = model.graph
    initialisers = {i.name: i for i in graph.initializer}
    producers = {out: node for node in graph.node for out in node.output}
    by_weight = {w.tobytes(): (w, peak) for w, peak in peaks}

    groups: dict[str, list] = {}  # input tensor -> the MatMuls over a constant 2-D weight reading it
    for node in graph.node:
        weight = initialisers.get(node.input[1]) if node.op_type == "MatMul" else None
        if weight is not None and len(weight.dims) == 2:
            groups.setdefault(node.input[0], []).append(node)

    def constant(name: str, value: np.ndarray) -> str:
        graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    replaced: dict[str, list] = {}  # name of a MatMul node -> nodes that compute its output instead
    lead: dict[str, list] = {}  # name of a group's first node -> the quantisation of its input
    for index, (tensor, nodes) in enumerate(groups.items()):
        weights = [numpy_helper.to_array(initialisers[n.input[1]]).astype(np.float32) for n in nodes]
        matched = [by_weight.get(w.tobytes()) for w in weights]
        if any(m is None for m in matched):
            raise ValueError(f"no activation peaks for a MatMul reading {tensor}")
        gelu = _is_gelu(tensor, producers)
        factor = smoothing(np.max([m[1] for m in matched], axis=0), np.max([np.abs(w).max(axis=1) for w in weights], axis=0),
                           alpha_gelu if gelu else alpha)
        p = f"w8a8_{index}_"
        x = p + "x"
        steps = [helper.make_node("Mul", [tensor, constant(p + "inverse_smoothing", (1.0 / factor).astype(np.float32))], [x])]
        if gelu:  # non-negative after the shift: 0..255 with zero point 0
            shift = (-GELU_FLOOR / factor).astype(np.float32)
            steps.append(helper.make_node("Add", [x, constant(p + "shift", shift)], [p + "shifted"]))
            x, levels, zero = p + "shifted", 255.0, np.uint8(0)
            steps.append(helper.make_node("ReduceMax", [x, constant(p + "axes", np.array([-1], np.int64))], [p + "peak"], keepdims=1))
        else:  # symmetric: -127..127 around zero point 128
            levels, zero = 127.0, np.uint8(128)
            steps += [helper.make_node("Abs", [x], [p + "magnitude"]),
                      helper.make_node("ReduceMax", [p + "magnitude", constant(p + "axes", np.array([-1], np.int64))],
                                       [p + "peak"], keepdims=1)]
        zero_point = constant(p + "zero", zero)
        steps += [
            helper.make_node("Max", [p + "peak", constant(p + "tiny", np.float32(1e-30))], [p + "peak_pos"]),
            helper.make_node("Mul", [p + "peak_pos", constant(p + "per_level", np.float32(1.0 / levels))], [p + "scale"]),
            helper.make_node("Shape", [p + "scale"], [p + "scale_shape"]),
            helper.make_node("Expand", [zero_point, p + "scale_shape"], [p + "zeros"]),
            helper.make_node("QuantizeLinear", [x, p + "scale", p + "zeros"], [p + "q"], axis=-1,
                             block_size=weights[0].shape[0]),
        ]
        lead[nodes[0].name] = steps
        for j, (node, w) in enumerate(zip(nodes, weights)):
            q, column_scale = pair_bounded_int8(w.astype(np.float64) * factor[:, None])
            name = f"{p}{j}_"
            out = [helper.make_node("MatMulIntegerToFloat",
                                    [p + "q", constant(name + "weight", q), constant(name + "one", np.array([1.0], np.float32)),
                                     constant(name + "column_scale", column_scale), zero_point],
                                    [name + "product"], domain="com.microsoft"),
                   helper.make_node("Mul", [name + "product", p + "scale"], [name + "scaled"] if gelu else list(node.output))]
            if gelu:  # (x / s + shift) @ (s W) = x @ W + shift' @ W: take the constant part off
                dequantised = q.astype(np.float64) * column_scale.astype(np.float64)
                correction = (shift.astype(np.float64) @ dequantised).astype(np.float32)
                out.append(helper.make_node("Sub", [name + "scaled", constant(name + "correction", correction)], list(node.output)))
            replaced[node.name] = out
            graph.initializer.remove(initialisers[node.input[1]])

    rewritten = []
    for node in graph.node:
        rewritten += lead.get(node.name, [])
        rewritten += replaced.get(node.name, [node])
    _int8_tables(graph, rewritten, initialisers)
    del graph.node[:]
    graph.node.extend(rewritten)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.checker.check_model(model)
    onnx.save(model, str(target))
    return Path(target)


def _is_gelu(tensor: str, producers: dict, depth: int = 4) -> bool:
    """Whether `tensor` is an exported GELU, x * 0.5 * (1 + erf(x / sqrt 2)): an Erf within `depth`
    element-wise steps (Mul, Add, Div) before it."""
    node = producers.get(tensor)
    if node is None or depth == 0:
        return False
    if node.op_type == "Erf":
        return True
    return node.op_type in ("Mul", "Add", "Div") and any(_is_gelu(i, producers, depth - 1) for i in node.input)


def _int8_tables(graph, nodes: list, initialisers: dict) -> None:
    """Large Gather tables (the word pieces') as int8 rows and a float scale per row, gathered and
    multiplied after the lookup: the file stays under the 25 MiB a committed file may have, and each
    looked-up row is what the float table would give up to its int8 rounding."""
    from onnx import TensorProto, helper, numpy_helper

    for node in list(nodes):
        table = initialisers.get(node.input[0]) if node.op_type == "Gather" else None
        if table is None or len(table.dims) != 2 or int(np.prod(table.dims)) < TABLE_ROWS_MIN:
            continue
        values = numpy_helper.to_array(table).astype(np.float32)
        peak = np.abs(values).max(axis=1)
        scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
        q = np.clip(np.round(values / scale[:, None]), -127, 127).astype(np.int8)
        name = table.name
        graph.initializer.remove(table)
        graph.initializer.extend([numpy_helper.from_array(q, name + "_int8"), numpy_helper.from_array(scale[:, None], name + "_row_scale")])
        index = nodes.index(node)
        nodes[index:index + 1] = [
            helper.make_node("Gather", [name + "_int8", node.input[1]], [name + "_rows_int8"], axis=0),
            helper.make_node("Gather", [name + "_row_scale", node.input[1]], [name + "_rows_scale"], axis=0),
            helper.make_node("Cast", [name + "_rows_int8"], [name + "_rows"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [name + "_rows", name + "_rows_scale"], list(node.output)),
        ]
