"""The shared sentence encoder (all-MiniLM-L6-v2 in ONNX): one 384-d unit vector per utterance.

Models ask for vectors through the request's EncodeCache, so each distinct utterance is encoded
once a request. A text's vector does not depend on its batch, to the bit, as the contract asks of a
score: the graph masks padding, but ONNX Runtime's ReduceSum sums in an order set by the tensor's
shape, so the graph's masked `token_embeddings` are pooled here, one text at a time (`pool`). A graph
without that output is refused at load.
"""
from __future__ import annotations

import logging
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from service.components.base import Component
from service.components.cache import EncodeCache
from service.config import encoder_precision
from service.observability import metrics, tracing
from service.artifacts.manifest import ManifestError
from service.artifacts.openvino import EP as OPENVINO
from service.artifacts.batching import length_buckets, shares
from service.artifacts.hardware import int8_dot_products

log = logging.getLogger(__name__)


def choose_precision(requested: str, cuda: bool, built: dict[str, bool], int8_dot: str | None,
                     cpu: str = "int8", command: str = "make encoder-fp32") -> tuple[str, str]:
    """The encoder file to serve, and why. `built`: for each file the component lists, whether it is in the
    folder. `auto` is fp32 on CUDA; on the CPU, w8a8 where the component lists one and the CPU has integer
    dot products (`int8_dot`), else `cpu` (the config's `cpu_precision`). A file wanted but not built
    gives way to `cpu`, int8, then fp32, whichever is built first; the reason names what builds it.

    MiniLM's `cpu_precision` is int8-float: the committed int8 file with its weights turned to float at
    load (FLOAT_MATMULS), faster than ONNX Runtime's int8 kernel and nearer sentence-transformers'
    vectors. w8a8 moves the heads' dev figures (they were fitted on int8's vectors), so it is built only."""
    return fall_back(*wanted_precision(requested, cuda, built, int8_dot, cpu), built, cpu, command)


def wanted_precision(requested: str, cuda: bool, built: dict[str, bool], int8_dot: str | None,
                     cpu: str = "int8", openvino: bool = False) -> tuple[str, str]:
    """choose_precision's first step: the file the settings and the machine ask for, and why. On
    OpenVINO (`openvino`) auto is the component's CPU file, and int8 is served as int8-float (OpenVINO
    compiles the int8 weights in float, openvino.float_graph); w8a8 only where asked for (OpenVINO
    cannot read it: the CPU EP then serves it)."""
    requested = encoder_precision(requested)
    if requested != "auto":
        if openvino and requested == "int8":
            return "int8-float", f"DIALSCORE_ENCODER_PRECISION={requested}: on OpenVINO the int8 weights in float"
        return requested, f"DIALSCORE_ENCODER_PRECISION={requested}"
    if cuda:
        return "fp32", "auto: CUDA"
    if openvino:
        return cpu, f"auto: {cpu} on OpenVINO"
    if "w8a8" in built and int8_dot:
        return "w8a8", f"auto: the CPU reports {int8_dot}"
    if "w8a8" in built:
        return cpu, "auto: the CPU reports no integer dot products"
    return cpu, f"auto: {cpu} on the CPU"


def fall_back(wanted: str, reason: str, built: dict[str, bool], cpu: str, command: str) -> tuple[str, str]:
    """choose_precision's second step: `wanted` where built, else the first built of `cpu`, int8, fp32."""
    if built.get(wanted):
        return wanted, reason
    fallback = next((p for p in (cpu, "int8", "fp32") if built.get(p)), cpu)
    hint = "make encoder-w8a8" if wanted == "w8a8" else command
    return fallback, f"{reason}, but {wanted} is not built ({hint})"


INT8_FILE = "encoder-int8.onnx"
# int8-float: ONNX Runtime folds each DequantizeLinear of the int8 weights into a float initializer at
# load instead of fusing it with its MatMul into MatMulNBits, which rounds activations to int8 per
# block of 32 channels: the weights stay int8-rounded and the arithmetic is float.
FLOAT_MATMULS = {"session.disable_quant_qdq": "1"}
SESSION_CONFIG = {"int8-float": FLOAT_MATMULS}
COUNT_FLOOR = 1e-9  # the graph's token-count clamp (training/encoders/minilm/export.py), as sentence-transformers
NORM_FLOOR = 1e-12  # torch.nn.functional.normalize's eps
TOKENS_OUTPUT = "token_embeddings"
LENGTH_STEP = 8  # texts are batched with others within 8 word pieces of their length


def pool(tokens: np.ndarray, length: int) -> np.ndarray:
    """Mean of a text's first `length` masked token vectors, L2-normalised: sentence-transformers'
    pooling, summed in an order that depends on the text alone (numpy adds the rows of a contiguous
    (length, 384) block one after another), never on the batch it ran in."""
    summed = tokens[:length].sum(axis=0, dtype=np.float32)
    mean = summed / np.float32(max(float(length), COUNT_FLOOR))
    norm = np.float32(np.sqrt(np.dot(mean, mean)))
    return mean / max(norm, np.float32(NORM_FLOOR))


class SentenceEncoder(Component):
    """Word pieces by `tokenizer.json`, truncated at the model's 256; embeddings by ONNX Runtime."""

    def _load(self) -> None:
        config = self.manifest.config
        self.max_length = int(config.get("max_length", 256))
        self.dim = int(config.get("dimension", 384))
        self.precision, self.chosen_by = self._choose_precision(config.get("files", {}))
        filename = self.filename = config.get("files", {}).get(self.precision, f"encoder-{self.precision}.onnx")
        self.tokenizer = Tokenizer.from_file(str(self.manifest.path(self.manifest.tokenizer or "tokenizer.json")))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_length)
        # Where OpenVINO cannot compile it the CPU EP serves the same file as it would by itself
        self.session = self.runtime.encoder_session(self.manifest.path(filename), SESSION_CONFIG.get(self.precision),
                                                    self.precision)
        if self.runtime.choice.encoder == OPENVINO and self.session.get_providers()[0] != OPENVINO:
            self.chosen_by = f"{self.chosen_by}; the CPU EP serves it (OpenVINO could not)"
        metrics.ENCODER_LOADS.labels(self.name, self.session.get_providers()[0], self.precision,
                                     self.session.compute or "-").inc()
        log.info("%s: %s on %s%s (%s; %s)", self.name, filename, self.session.get_providers()[0],
                 f", computing in {self.session.compute}" if self.session.compute else "", self.chosen_by,
                 self.runtime.choice.reason)
        # The service pools the tokens itself: the graph's own pooling rounds by the batch's shape
        if TOKENS_OUTPUT not in self.session.outputs:
            raise ManifestError(f"{self.name}: {filename} has no {TOKENS_OUTPUT} output; re-export it "
                                "(training/encoders/minilm/export.py)")

    def _choose_precision(self, files: dict[str, str]) -> tuple[str, str]:
        requested = self.runtime.settings.encoder_precision
        cuda = self.runtime.choice.encoder == "CUDAExecutionProvider"
        built = {precision: name in self.manifest.files for precision, name in files.items()}
        built.setdefault("int8", INT8_FILE in self.manifest.files)
        cpu = self.manifest.config.get("cpu_precision", "int8")
        wanted, why = wanted_precision(requested, cuda, built, int8_dot_products(), cpu,
                                       openvino=self.runtime.choice.encoder == OPENVINO)
        chosen, reason = fall_back(wanted, why, built, cpu, self.manifest.build.get("command", "make encoder-fp32"))
        if chosen != wanted:
            # the clone's own choice (MiniLM without w8a8) is no fault: a warning where a file was asked for
            clone_default = wanted == "w8a8" and encoder_precision(requested) == "auto"
            log.log(logging.INFO if clone_default else logging.WARNING, "%s: %s; using %s", self.name, reason, chosen)
        return chosen, reason

    def sessions(self) -> list[Any]:
        return [self.session]

    def served_files(self) -> dict[str, Any]:
        # The files give scores up to 1.5e-2 of a range apart: a client comparing pods needs to know.
        served = {"precision": self.precision, "file": self.filename, "chosen_by": self.chosen_by,
                  "provider": self.session.get_providers()[0], "provider_chosen_by": self.runtime.choice.reason,
                  "bit_exact_across_batches": self.session.bit_exact_across_batches}
        return {**served, "compute": self.session.compute} if self.session.compute else served

    def work(self, texts: list[str], cache: EncodeCache | None = None) -> int:
        """Word pieces after truncation: the transformer's cost grows with them, so they, not characters
        or items, bound a request. Tokenised through `cache`, which the encoder then reads."""
        return sum(len(encoding.ids) for encoding in self._tokens(texts, cache or EncodeCache())) if texts else 0

    def _tokens(self, texts: list[str], cache: EncodeCache) -> list[Any]:
        return cache.tokens(self.name, texts, lambda missing: self.tokenizer.encode_batch(missing))

    def encode(self, texts: list[str], cache: EncodeCache | None = None) -> np.ndarray:
        """(len(texts), 384) float32 unit vectors, rows in order; unseen texts only are run."""
        if cache is None:
            cache = EncodeCache()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return cache.get_many(self.name, list(texts), lambda missing: self._encode(missing, cache))

    def _encode(self, texts: list[str], cache: EncodeCache) -> np.ndarray:
        encodings = self._tokens(list(texts), cache)
        lengths = [len(e.ids) for e in encodings]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Cut at every LENGTH_STEP word pieces of length: less padding than one bucket of mixed lengths.
        batch_size = self.runtime.settings.batch_size
        if self.session.on_cuda:  # batches run at once, as they come
            work = [[batch] for batch in length_buckets(lengths, batch_size, step=LENGTH_STEP)]
        else:  # a share of equal word pieces for each of the worker's threads: a lone request uses every core
            work = shares(lengths, self.runtime.encoder_threads, batch_size, step=LENGTH_STEP)

        def run(batch: list[int]) -> None:
            width = max(lengths[i] for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, index in enumerate(batch):
                ids[row, : lengths[index]] = encodings[index].ids
                mask[row, : lengths[index]] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            (tokens,) = self.session.run(feeds, [TOKENS_OUTPUT])
            for row, index in enumerate(batch):
                out[index] = pool(tokens[row], lengths[index])

        def run_share(share: list[list[int]]) -> None:
            for batch in share:
                run(batch)

        with tracing.span("encoder", model=self.name, texts=len(texts), word_pieces=sum(lengths), runs=sum(map(len, work))):
            self.runtime.map_threads(run_share, work)
        return out
