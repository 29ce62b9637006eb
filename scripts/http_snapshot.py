"""Answers of a few hundred fixed requests across every endpoint and model, as one JSON file.

Run before and after a change that must not alter HTTP behaviour, then compare the two files:
`python scripts/http_snapshot.py --out before.json` ... `python scripts/http_snapshot.py --out after.json --compare before.json`.
Bodies are compared bit for bit (floats as JSON writes them); /metrics is left out (its counts depend
on what ran before).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CONTEXTS = [
    ["hey, what do you want to do tonight?", "why don't we go see a movie?"],
    ["i just got back from paris."],
    ["do you like dogs?", "yes, i have two.", "what are their names?"],
    ["it's raining again…", "“so what?” she said."],
    ["how are you?"],
    ["i failed my exam today", "oh no, what happened?", "i didn't study enough", "that's rough"],
]
RESPONSES = [
    "nah, let's do something active.",
    "that sounds wonderful, how was the food?",
    "rex and bella.",
    "i don't know.",
    "how are you?",
    "i'm sorry to hear that. maybe next time you'll do better!",
    "",
    "yes yes yes yes yes yes",
]
REFERENCES = [
    "yeah, the film about turing looks great!",
    "welcome back! did you see the eiffel tower?",
    "max and luna.",
    "let's stay in then.",
    "fine thanks, and you?",
    "you'll pass the next one.",
]
DIALOGUE = [
    {"speaker": "user", "text": "hi there, how is your day going?"},
    {"speaker": "bot", "text": "pretty good! i just finished reading a great book."},
    {"speaker": "user", "text": "oh nice, what was it about?"},
    {"speaker": "bot", "text": "it was about a dog who travels the world."},
    {"speaker": "user", "text": "that sounds fun, i love dogs :)"},
    {"speaker": "bot", "text": "me too! do you have one?"},
]


def items(n: int, seed: int, reference: bool = True) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        item: dict[str, Any] = {"context": rng.choice(CONTEXTS), "response": rng.choice(RESPONSES[:6])}
        if reference:
            item["reference"] = rng.choice(REFERENCES)
        out.append(item)
    return out


def dialogues(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(2, len(DIALOGUE))
        out.append({"turns": DIALOGUE[:k]})
    return out


def requests(models: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    """(method, path, body): body is a JSON value, or bytes sent as they are."""
    out: list[tuple[str, str, Any]] = [
        ("GET", "/healthz", None), ("GET", "/readyz", None), ("GET", "/models", None),
        ("GET", "/openapi.json", None), ("GET", "/nope", None), ("PUT", "/score", None),
        ("DELETE", "/rerank", None), ("GET", "/score", None),
        ("POST", "/score", b"not json"), ("POST", "/score", b"[1, 2]"), ("POST", "/score", b'{"a": NaN}'),
        ("POST", "/score", b'{"model": "length", "model": "bleu4"}'), ("POST", "/score", b"[" * 100 + b"]" * 100),
        ("POST", "/score", {"model": "no-such-model", "items": items(1, 0)}),
        ("POST", "/score", {"items": items(1, 0)}),
        ("POST", "/score", {"model": "length", "items": []}),
        ("POST", "/score", {"model": "length", "items": items(513, 1, reference=False)}),
        ("POST", "/score", {"model": "length", "items": [{"context": ["x"] * 51, "response": "y"}]}),
        ("POST", "/score", {"model": "length", "items": [{"context": ["x"], "response": "y" * 2001}]}),
        ("POST", "/score", {"model": "length", "items": items(2, 2), "options": {"nope": 1}}),
        ("POST", "/score", {"model": "length", "items": items(2, 2), "extra": 1}),
        ("POST", "/score", {"models": ["length", "bleu4", "minilm-cosine"], "items": items(5, 3)}),
        ("POST", "/score", {"models": ["adem", "autojudge-minilm", "ruber"], "items": items(4, 4)}),
        ("POST", "/score", {"models": ["length", "mh"], "items": items(2, 5)}),
    ]
    for m in models:
        name, kind = m["name"], m["kind"]
        if kind == "dialogue":
            for seed in range(4):
                out.append(("POST", "/score", {"model": name, "items": dialogues(3 + seed, seed)}))
            for variant in m.get("options", {}).get("variant", {}).get("choices", []):
                for proxies in (False, True):
                    out.append(("POST", "/score", {"model": name, "items": dialogues(3, 9),
                                                   "options": {"variant": variant, "proxies": proxies}}))
            out.append(("POST", "/score", {"model": name, "items": [{"turns": []}]}))
            out.append(("POST", "/score", {"model": name, "items": [{"turns": [{"speaker": "bot", "text": " "}]}]}))
            out.append(("POST", "/score", {"model": name, "items": [{"turns": DIALOGUE}, {"turns": "x"}],
                                           "on_invalid": "skip"}))
            out.append(("POST", "/score", {"model": name, "items": items(1, 0)}))
            continue
        referenced = kind == "referenced"
        for seed in range(6):
            out.append(("POST", "/score", {"model": name, "items": items(1 + 5 * seed, seed, referenced)}))
        out.append(("POST", "/score", {"model": name, "items": items(3, 7, True)}))
        bad = items(4, 8, referenced)
        bad[1] = {"context": [], "response": "x", "reference": "y"}
        bad[2] = {"context": ["a"], "response": "   "}
        out.append(("POST", "/score", {"model": name, "items": bad}))
        out.append(("POST", "/score", {"model": name, "items": bad, "on_invalid": "skip"}))
        out.append(("POST", "/score", {"model": name, "items": [{"context": ["\u0000"], "response": "\u0000",
                                                                 "reference": "\u0000"}]}))
        for option, spec in m.get("options", {}).items():
            values = spec.get("choices") or ([True, False] if spec.get("type") == "boolean" else [])
            for value in values:
                out.append(("POST", "/score", {"model": name, "items": items(4, 11, True),
                                               "options": {option: value}}))
        if "blend" in m.get("options", {}):
            out.append(("POST", "/score", {"model": name, "items": items(4, 12, True),
                                           "options": {"blend": "geometric", "components": True}}))
            out.append(("POST", "/score", {"model": name, "items": items(2, 12, True),
                                           "options": {"blend": "nope"}}))
        rng = random.Random(name)
        for k in range(4):
            body: dict[str, Any] = {"model": name, "context": rng.choice(CONTEXTS),
                                    "candidates": rng.sample(RESPONSES[:6], 3 + k % 3)}
            if k % 2 == 0:
                body["reference"] = rng.choice(REFERENCES)
            if k == 3:
                body["top_k"] = 2
            out.append(("POST", "/rerank", body))
        out.append(("POST", "/rerank", {"model": name, "context": ["hi"], "candidates": ["a", "", "b"],
                                        "reference": "c", "on_invalid": "skip"}))
        out.append(("POST", "/rerank", {"model": name, "context": ["hi"], "candidates": ["a"] * 65}))
    human = [random.Random(i).uniform(1, 5) for i in range(40)]
    scores = {f"m{j}": [h + random.Random(100 * j + i).gauss(0, j + 0.5) for i, h in enumerate(human)]
              for j in range(4)}
    systems = [f"s{i % 5}" for i in range(40)]
    out += [
        ("POST", "/correlate", {"human": human, "scores": scores}),
        ("POST", "/correlate", {"human": human, "scores": scores, "systems": systems,
                                "methods": ["pearson", "spearman", "kendall"], "confidence": 0.9,
                                "resamples": 300, "seed": 3}),
        ("POST", "/correlate", {"human": [[h, h + 1] for h in human], "scores": {"a": scores["m0"]}}),
        ("POST", "/correlate", {"human": [1, 1, 1, 1], "scores": {"a": [1, 2, 3, 4]}}),
        ("POST", "/correlate", {"human": [1, 2], "scores": {"a": [1, 2, 3]}}),
        ("POST", "/correlate", {"human": human, "scores": {}}),
        ("POST", "/correlate", {"human": human, "scores": scores, "methods": ["nope"]}),
    ]
    rng = random.Random(5)
    ratings = []
    for rater in range(6):
        for system in ("A", "B", "C", "degraded"):
            for item in range(6):
                base = {"A": 70, "B": 55, "C": 40, "degraded": 15}[system] + (10 if rater == 5 else 0)
                ratings.append({"rater": f"w{rater}", "system": system, "item": f"{system}-{item}",
                                "scores": {c: max(0, min(100, base + rng.gauss(0, 12)))
                                           for c in ("interesting", "fun", "robotic")}})
    out += [
        ("POST", "/human-eval", {"ratings": ratings, "reverse": ["robotic"], "scale": [0, 100],
                                 "qc_system": "degraded", "alpha": 0.05}),
        ("POST", "/human-eval", {"ratings": ratings, "scale": [0, 100]}),
        ("POST", "/human-eval", {"ratings": ratings[:10], "reverse": ["robotic", "repetitive"],
                                 "scale": [0, 100], "qc_system": "nope"}),
        ("POST", "/human-eval", {"ratings": [], "scale": [0, 100]}),
        ("POST", "/human-eval", {"ratings": ratings, "scale": [100, 0]}),
    ]
    return out


def snapshot(model_store: Path) -> list[dict[str, Any]]:
    from service.app import create_app

    app = create_app({"model_store": model_store, "load_sync": True})
    app.config["TESTING"] = True
    client = app.test_client()
    models = client.get("/models").get_json()["models"]
    answers = []
    for method, path, body in requests(models):
        kwargs: dict[str, Any] = {}
        if isinstance(body, bytes):
            kwargs = {"data": body, "content_type": "application/json"}
        elif body is not None:
            kwargs = {"json": body}
        response = client.open(path, method=method, **kwargs)
        answers.append({"request": [method, path, body if not isinstance(body, bytes) else body.decode()],
                        "status": response.status_code,
                        "allow": response.headers.get("Allow"),
                        "content_type": response.headers.get("Content-Type"),
                        "body": response.get_data(as_text=True)})
    return answers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model-store", type=Path, default=REPO / "model_store")
    parser.add_argument("--compare", type=Path, help="an earlier snapshot: exit 1 where an answer differs")
    args = parser.parse_args()
    answers = snapshot(args.model_store)
    args.out.write_text(json.dumps(answers, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(answers)} requests -> {args.out}")
    if args.compare:
        before = json.loads(args.compare.read_text())
        if len(before) != len(answers):
            print(f"differ: {len(before)} requests before, {len(answers)} now")
            return 1
        differ = [i for i, (a, b) in enumerate(zip(before, answers)) if a != b]
        for i in differ[:20]:
            print(f"differ: #{i} {answers[i]['request'][0]} {answers[i]['request'][1]}")
        print(f"{len(answers) - len(differ)} of {len(answers)} answers identical")
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
