"""AutoJudge (Deriu & Cieliebak 2019): its reference-free head on the VHRED encoder (autojudge) and on MiniLM
(autojudge-minilm), training, export, cards, the self-talk of its data generation and the fine-tuning experiment."""
