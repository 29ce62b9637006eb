"""The /rerank bodies the load test sends: chit-chat contexts and candidate replies built deterministically
from fixed phrases, so request i is the same every run and its candidates are distinct sentences."""
from __future__ import annotations

import json
import random

CONTEXTS = [
    ["hey, what do you want to do tonight?", "why don't we go see a movie?", "which one were you thinking of?"],
    ["i just got back from my trip to portugal.", "oh nice, how was the weather?", "sunny every single day."],
    ["my sister is starting a new job on monday.", "that's great news, what will she be doing?"],
    ["i can't decide whether to adopt a cat or a dog.", "do you have a garden?", "a small one, yes."],
    ["have you been cooking anything interesting lately?", "i tried making fresh pasta last weekend."],
    ["the train was delayed again this morning.", "how long did you have to wait?", "almost forty minutes."],
    ["i've been learning to play the guitar.", "how long have you been practising?"],
    ["did you watch the match yesterday?", "only the second half, it was so tense!", "who do you think played best?"],
]
OPENERS = ["honestly,", "well,", "oh,", "i think", "to be fair,", "haha,", "hmm,", "you know,", "sure,", "maybe"]
SUBJECTS = ["my brother", "the weather", "that movie", "our neighbours", "the new cafe", "my old teacher",
            "the concert", "this city", "my phone", "the football team", "your idea", "the museum"]
VERBS = ["reminds me of", "was nothing like", "made me think about", "is much better than", "keeps talking about",
         "could be perfect for", "has nothing to do with", "surprised me more than"]
OBJECTS = ["a quiet weekend by the sea.", "the summer we spent in spain.", "a long walk in the park.",
           "the book i'm reading.", "cooking dinner together.", "the last time we went out.",
           "learning something new.", "staying in with a good show.", "a trip to the mountains.",
           "the best pizza in town.", "getting up early on sunday.", "the song you sent me."]


def candidates(i: int, n: int) -> list[str]:
    """`n` distinct replies for request i (a seeded choice of phrases, numbered where two would coincide)."""
    rng = random.Random(i)
    seen: set[str] = set()
    out = []
    while len(out) < n:
        text = f"{rng.choice(OPENERS)} {rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
        if text in seen:
            text = f"{text[:-1]}, number {len(out)}."
        seen.add(text)
        out.append(text)
    return out


def rerank_body(i: int, model: str, n: int) -> bytes:
    """Request i's JSON body: a context from CONTEXTS and `n` candidate replies."""
    return json.dumps({"model": model, "context": CONTEXTS[i % len(CONTEXTS)],
                       "candidates": candidates(i, n)}).encode()
