"""Vector arithmetic the GloVe scorers and the M_H proxies share."""
from __future__ import annotations

import numpy as np


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """cos(a, b), 0 where either is the zero vector: no known word is no evidence of similarity."""
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norm if norm > 0 else 0.0
