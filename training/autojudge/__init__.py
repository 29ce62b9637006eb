"""AutoJudge (Deriu & Cieliebak 2019): a reference-free bilinear head on the frozen pre-trained encoder."""
