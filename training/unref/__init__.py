"""The stacked reference-free models (`python -m training train-unref`: recipes, out-of-fold heads, the
fit and its leave-one-set-out choice, export, card). The papers' own reference-free parts are options
of their models (`options.reference_free`), which need no training of their own."""
