"""The VHRED tokenizer: training it twice on the same text, in two processes, gives the same file."""
from __future__ import annotations

import subprocess
import sys

from training.encoders.hred import tokenizer as bpe

TRAIN = """
import sys
from training.encoders.hred.tokenizer import train_bpe
texts = [f"turn {i} says {w} and {w}s to the {v}" for i in range(300)
         for w, v in (("hello", "world"), ("thanks", "friend"), ("maybe", "weekend"), ("sorry", "noise"))]
sys.stdout.write(train_bpe(texts, vocab_size=120).to_str())
"""


def test_training_is_deterministic_across_processes() -> None:
    # hash-map order differs per process: the trainer's end_of_word_suffix made these differ
    runs = {subprocess.run([sys.executable, "-c", TRAIN], capture_output=True, text=True, check=True).stdout
            for _ in range(3)}
    assert len(runs) == 1


def test_encodings_end_in_eos_are_truncated_and_decode_to_words() -> None:
    tok = bpe.train_bpe(["hello there how are you", "i am fine thanks, and you?"] * 20, vocab_size=100, max_tokens=6)
    assert bpe.encode(tok, [""]) == [[bpe.EOS_ID]]
    ids = tok.encode("hello there how are you").ids
    assert ids[-1] == bpe.EOS_ID and len(ids) == 6
    assert tok.decode(tok.encode("how are you").ids) == "how are you"


def test_served_maps_curly_quotes_and_changes_nothing_else() -> None:
    """The exported tokenizer.json (training/encoders/hred/export.py): ’ ‘ “ ” read as ' and ", in front of the
    run's own normaliser; every other text gets the run's ids, and mapping twice is mapping once."""
    import json

    tok = bpe.train_bpe(["i think it's going to rain today.", 'she said "hi" to me.',
                         "i think it’s going to rain today.", "she said “hi” to ‘me’."] * 20, vocab_size=150)
    served = bpe.served(tok)
    for curly, straight in (("it’s ‘fine’", "it's 'fine'"), ("she said “hi”", 'she said "hi"')):
        assert served.encode(curly).ids == served.encode(straight).ids == tok.encode(straight).ids
        assert tok.encode(curly).ids != tok.encode(straight).ids  # the run's own tokenizer does not map
    for text in ("Hello THERE, how are you?", "", "naïve café – 2 €"):
        assert served.encode(text).ids == tok.encode(text).ids
    raw, mapped = json.loads(tok.to_str()), json.loads(served.to_str())
    assert mapped["normalizer"]["normalizers"][-1] == raw["normalizer"]
    assert {k: v for k, v in mapped.items() if k != "normalizer"} == {k: v for k, v in raw.items() if k != "normalizer"}
    assert bpe.served(served).to_str() == served.to_str()
