"""ruber-minilm's own steps around the shared training of heads on turn vectors: the min-max ranges of its
two parts, the blend development data chooses as its default, and its request options."""
from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch
from scipy import stats

from service.scorers.ruber.blending import BLENDS, blend, normalise_min_max
from service.scorers.ruber.minilm import RuberMiniLM
from training.core.next_turn import VectorCache
from training.core.turn_training import Config, predict
from training.data.negatives import negative_samples

NAME = "ruber-minilm"


def ranges(head: torch.nn.Module, config: Config, cache: VectorCache) -> dict[str, list[float]]:
    """RUBER's min-max normalisation bounds: the 1st and 99th percentile of each part on training pairs.

    Only pairs whose reference is a *different* human reply to the same context count: a context with a single
    reply is its own reference there (cos = 1), which would stretch s_ref's range far past what a reply and a
    genuine reference reach, and the blend would lean on s_unref."""
    ranked = negative_samples(config, random.Random(config.seed + 7), for_ruber=True)
    keep = [i for i, (good, ref) in enumerate(zip(ranked.good, ranked.references)) if good != ref]
    if len(keep) < 100:  # tiny test runs: too few multi-reply contexts, use every pair
        keep = list(range(len(ranked.good)))
    keep = keep[:6000]
    contexts = [ranked.contexts[i] for i in keep]
    out = predict(head, cache, config.encoding, contexts * 2, [ranked.good[i] for i in keep]
                  + [ranked.bad[i] for i in keep], [ranked.references[i] for i in keep] * 2)
    return {key: [float(np.percentile(out[key], 1)), float(np.percentile(out[key], 99))] for key in ("s_ref", "s_unref")}


def choose_blend(head: torch.nn.Module, config: Config, cache: VectorCache, rows: dict) -> dict[str, float]:
    """Each part min-max normalised with the served bounds, then every one of RUBER's blends measured on the
    development `rows`; as in Tao et al. 2018 the blend with the highest mean Pearson becomes the served default
    (config.blend, every blend's figures in config.blend_dev). Returns the chosen blend's Pearson per set."""
    bounds = ranges(head, config, cache)
    per_blend: dict[str, dict[str, float]] = {how: {} for how in BLENDS}
    for name, (contexts, responses, references, scores) in rows.items():
        out = predict(head, cache, config.encoding, contexts, responses, references)
        s_ref, s_unref = (normalise_min_max(out[k], *bounds[k]) for k in ("s_ref", "s_unref"))
        for how in BLENDS:
            per_blend[how][name] = round(float(stats.pearsonr(blend(s_ref, s_unref, how), scores)[0]), 4)
    config.blend = max(BLENDS, key=lambda how: np.mean(list(per_blend[how].values())))
    config.blend_dev = per_blend
    return dict(per_blend[config.blend])


def options(config: Config) -> dict[str, Any]:
    """The scorer's request options, with the blend development data chose as the default."""
    chosen = getattr(config, "blend", "arithmetic")
    return {**RuberMiniLM.default_options, "blend": {**RuberMiniLM.default_options["blend"], "default": chosen}}
