"""Proxy matrices for rated conversations, computed by the service's own code on the store's components,
so the regression is fitted on the numbers the served `mh` computes."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from service.scorers.mh import proxies
from service.store.registry import component_class
from service.artifacts.manifest import read_manifest, verify_files
from service.artifacts.runtime import Runtime, RuntimeSettings
from service.scorers.base import EncodeCache

GLOVE = "glove-50d"
ENCODER = "minilm-l6"


def load_components(store: Path, names: Sequence[str] = (GLOVE, ENCODER), threads: int = 1) -> dict[str, Any]:
    """The named components of a model store, verified and built as the service builds them."""
    runtime = Runtime(RuntimeSettings(providers=("CPUExecutionProvider",), intra_op_threads=threads))
    built: dict[str, Any] = {}
    for name in names:
        manifest = read_manifest(Path(store) / name)
        verify_files(manifest)
        built[name] = component_class(manifest.scorer)(manifest, runtime)
    return built


def proxy_matrix(conversations: Sequence[Any], components: dict[str, Any], variant: str = "human-bot",
                 cache: EncodeCache | None = None) -> np.ndarray:
    """(n, len(PROXIES)) proxies of conversations that have `.speakers` and `.texts` (NaN = missing)."""
    cache = cache or EncodeCache()
    glove, encoder = components[GLOVE], components[ENCODER]
    roles = [proxies.assign_roles(c.speakers, c.texts, variant) for c in conversations]
    texts = proxies.pair_texts(roles)
    if texts:
        encoder.encode(texts, cache)  # batched once, as the scorer does; later calls hit the cache
    rows = []
    for conversation in roles:
        values = proxies.compute(conversation, glove.embed, lambda batch: encoder.encode(batch, cache))
        rows.append(proxies.vector(values))
    return np.vstack(rows) if rows else np.zeros((0, len(proxies.PROXIES)))
