"""Correlations between metric scores and human judgements, with intervals and significance tests.

Pure functions (no Flask) behind POST /correlate, POST /human-eval and `python -m service.analysis`:
correlation.py (r, p), bootstrap.py (intervals, paired comparisons), designs.py (what each level's
bootstrap resamples), significance.py (Williams),
agreement.py (Krippendorff's alpha), correlate.py (the /correlate body), human_eval.py (Ji et al. 2022).
"""
from service.stats.agreement import krippendorff_alpha_interval, krippendorff_alpha_ordinal
from service.stats.bootstrap import (bootstrap_distribution, bootstrap_distributions, bootstrap_p,
                                     bootstrap_work_items, min_resamples, paired_bootstrap, percentile_interval,
                                     resample_indices, stratified_indices, system_bootstrap_distributions)
from service.stats.correlate import StatsInputError, correlate
from service.stats.correlation import METHODS, MIN_ITEMS, correlation
from service.stats.designs import DEFAULT_DESIGN, DEFAULT_ITEM_DESIGN, DESIGNS, ITEM_DESIGNS, system_resamples
from service.stats.significance import williams_test

__all__ = ["DEFAULT_DESIGN", "DEFAULT_ITEM_DESIGN", "DESIGNS", "ITEM_DESIGNS", "METHODS", "MIN_ITEMS", "StatsInputError", "bootstrap_distribution",
           "bootstrap_distributions", "bootstrap_p", "bootstrap_work_items", "correlate", "correlation",
           "krippendorff_alpha_interval", "krippendorff_alpha_ordinal", "min_resamples", "paired_bootstrap", "percentile_interval",
           "resample_indices", "stratified_indices", "system_bootstrap_distributions", "system_resamples",
           "williams_test"]
