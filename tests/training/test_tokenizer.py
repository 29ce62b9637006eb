"""The VHRED tokenizer: training it twice on the same text, in two processes, gives the same file."""
from __future__ import annotations

import subprocess
import sys

from training import tokenizer as bpe

TRAIN = """
import sys
from training.tokenizer import train_bpe
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
