"""Sentence vectors of training text, computed with the service's own encoder component (MiniLM's committed
int8 graph unless another store folder is named) and cached on disk; a cache made by another graph is
encoded again, and so is one computed on another execution provider or in another precision (computed_on)."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from service.components.sentence_encoder import INT8_FILE, SentenceEncoder, choose_precision
from service.artifacts.manifest import Manifest, read_manifest
from service.artifacts.providers import CPU
from service.artifacts.hardware import int8_dot_products
from service.artifacts.runtime import Runtime, RuntimeSettings

DEFAULT_CACHE = Path(os.environ.get("DIALSCORE_MINILM_CACHE", "/tmp/dialscore-minilm-cache"))
DEFAULT_ENCODER = Path(__file__).resolve().parents[3] / "model_store" / "minilm-l6"
INTEGER_PRECISIONS = ("int8", "w8a8")  # files the CPU EP runs with integer matrix kernels


def load_encoder(folder: Path = DEFAULT_ENCODER, threads: int = 1) -> SentenceEncoder:
    """The service's encoder component on CPU, `threads` intra-op threads (1 on a shared machine), on
    the component's `cpu_precision` file whatever else is built (not MiniLM's w8a8, which a CPU with
    integer dot products would pick), so that no head's fit depends on the CPU it ran on."""
    manifest = read_manifest(Path(folder))
    runtime = Runtime(RuntimeSettings(providers=("CPUExecutionProvider",), intra_op_threads=threads,
                                      encoder_precision=manifest.config.get("cpu_precision", "int8")))
    return SentenceEncoder(manifest, runtime)


def cpu_precision(manifest: Manifest) -> str:
    """The precision load_encoder serves from this component folder: its `cpu_precision` where built."""
    files = manifest.config.get("files", {})
    built = {precision: name in manifest.files for precision, name in files.items()}
    built.setdefault("int8", INT8_FILE in manifest.files)
    cpu = manifest.config.get("cpu_precision", "int8")
    precision, _ = choose_precision(cpu, cuda=False, built=built, int8_dot=None, cpu=cpu)
    return precision


def encoder_identity(folder: Path = DEFAULT_ENCODER, encoder: SentenceEncoder | None = None) -> dict[str, str]:
    """What the cached vectors depend on: the component's name and version, the served graph's hash, the
    precision where the file's name does not say it (int8-float runs the int8 file in float), and where
    it ran (computed_on). Without `encoder`, load_encoder's: the folder's CPU precision on the CPU EP."""
    manifest = encoder.manifest if encoder is not None else read_manifest(Path(folder))
    precision = encoder.precision if encoder is not None else cpu_precision(manifest)
    filename = manifest.config.get("files", {}).get(precision, f"encoder-{precision}.onnx")
    identity = {"name": manifest.name, "version": manifest.version, "file": filename,
                "sha256": str(manifest.files.get(filename, {}).get("sha256"))}
    if filename != f"encoder-{precision}.onnx":
        identity["precision"] = precision
    served = encoder.served_files() if encoder is not None else {"provider": CPU}
    return {**identity, **computed_on(served["provider"], served.get("compute"), precision)}


def computed_on(provider: str, compute: str | None, precision: str) -> dict[str, str]:
    """What besides the graph sets a vector's bits: the execution provider, the precision OpenVINO computes
    in (bf16 where the CPU has it), and for the CPU EP's integer kernels the CPU's int8 dot-product
    instructions (they round differently with and without VNNI); int8-float and fp32 are float arithmetic."""
    where = {"provider": provider}
    if compute:
        where["compute"] = compute
    if provider == CPU and precision in INTEGER_PRECISIONS:
        where["int8_dot"] = str(int8_dot_products())
    return where


class EmbeddingCache:
    """text -> vector (384-d for MiniLM), persisted as one `cache.npz` (texts, vectors, the encoder's identity).

    One file, written beside and moved into place: a reader sees one complete save, and two writers
    sharing the folder lose each other's additions (the last save wins), never their alignment.
    """

    FILE = "cache.npz"

    def __init__(self, folder: Path = DEFAULT_CACHE, encoder: SentenceEncoder | None = None,
                 encoder_folder: Path = DEFAULT_ENCODER) -> None:
        self.folder = Path(folder)
        self._encoder = encoder
        self.encoder_folder = Path(encoder_folder)
        self.index: dict[str, int] = {}
        self.rows: list[np.ndarray] = []
        self.identity = encoder_identity(self.encoder_folder, encoder)
        self.dim = encoder.dim if encoder is not None else int(
            read_manifest(self.encoder_folder).config.get("dimension", 384))
        self.writable = True
        path = self.folder / self.FILE
        if not path.is_file():
            return
        try:
            with np.load(path, allow_pickle=False) as saved:
                texts = json.loads(str(saved["texts"]))
                vectors = saved["vectors"]
                made_by = json.loads(str(saved["encoder"]))
        except Exception as exc:  # noqa: BLE001 - any unreadable cache is rebuilt, never trusted
            _say(f"embedding cache {path}: unreadable ({type(exc).__name__}: {exc}): encoding again")
            return
        if made_by != self.identity:
            _say(f"embedding cache {self.folder}: made by {made_by}, not by {self.identity}: encoding again")
        elif len(texts) != len(vectors):
            _say(f"embedding cache {self.folder}: {len(texts)} texts but {len(vectors)} vectors: encoding again")
        else:
            self.index = {t: i for i, t in enumerate(texts)}
            self.rows = list(vectors)

    @property
    def encoder(self) -> SentenceEncoder:
        if self._encoder is None:
            self._encoder = load_encoder(self.encoder_folder)
        return self._encoder

    def add(self, texts: list[str], chunk: int = 2048, log: bool | None = None) -> None:
        """Encode the texts not yet cached, saving after every chunk (a long run can be resumed).

        Progress goes to stderr where there is more than one chunk to encode (`log` None), so that
        filling a fresh cache is not minutes of silence."""
        missing = [t for t in dict.fromkeys(texts) if t not in self.index]
        log = len(missing) > chunk if log is None else log
        if log and missing:
            print(f"encoding {len(missing)} texts not in the {self.identity['name']} cache {self.folder}",
                  file=sys.stderr, flush=True)
        started = time.time()
        for start in range(0, len(missing), chunk):
            part = missing[start:start + chunk]
            vectors = self.encoder.encode(part)  # part holds distinct texts: one run each
            for text, vector in zip(part, vectors):
                self.index[text] = len(self.rows)
                self.rows.append(vector)
            self.save()
            if log:
                done = start + len(part)
                rate = done / max(time.time() - started, 1e-9)
                print(f"encoded {done}/{len(missing)} ({rate:.0f}/s, {(len(missing) - done) / rate:.0f} s left)",
                      file=sys.stderr, flush=True)

    def get(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) vectors; encodes what is missing first."""
        self.add(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.rows[self.index[t]] for t in texts]).astype(np.float32)

    def save(self) -> None:
        """Write the cache in one piece; a folder that cannot be written keeps the vectors in memory."""
        if not self.writable:
            return
        texts = [""] * len(self.index)
        for text, row in self.index.items():
            texts[row] = text
        vectors = np.stack(self.rows) if self.rows else np.zeros((0, self.dim), np.float32)
        path = self.folder / self.FILE
        partial = self.folder / f".{self.FILE}.{os.getpid()}.partial"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(partial, "wb") as handle:
                np.savez(handle, texts=np.array(json.dumps(texts)), vectors=vectors,
                         encoder=np.array(json.dumps(self.identity)))
            os.replace(partial, path)
        except OSError as exc:
            self.writable = False
            _say(f"embedding cache {self.folder}: cannot be written ({exc.strerror or exc}): vectors are kept "
                 "in memory for this run only")


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
