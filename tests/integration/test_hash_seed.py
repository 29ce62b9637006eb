"""Every worker gives the same bytes for the same request. Workers are processes, and each hashes
strings with its own seed (PYTHONHASHSEED): an order taken from a set of strings becomes two
answers, as the allowed methods of a 405 and a 422's unknown fields did."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import BASELINES, REPO

ANSWERS = """
import json, sys
from service.app import create_app
client = create_app({"model_store": sys.argv[1], "load_sync": True}).test_client()
answers = [client.open(path, method=method, json=body) for method, path, body in json.loads(sys.argv[2])]
print(json.dumps([[a.status_code, a.headers.get("Allow"), a.get_data(as_text=True)] for a in answers]))
"""
ITEM = {"context": ["hey, what do you want to do tonight?", "not sure, any ideas?"],
        "response": "let's go climbing at the gym.", "reference": "a movie sounds good."}
REQUESTS = [
    ("GET", "/models", None), ("GET", "/openapi.json", None), ("GET", "/no-such-page", None),
    ("GET", "/score", None), ("OPTIONS", "/score", None), ("OPTIONS", "/models", None),
    *(("POST", "/score", {"model": name, "items": [ITEM, {**ITEM, "response": "no."}]}) for name in BASELINES),
    ("POST", "/rerank", {"model": "bleu4", "context": ITEM["context"], "candidates": ["yes", "let's go out"],
                         "references": ["a movie"]}),
    ("POST", "/correlate", {"human": [1, 2, 3, 4, 5, 6], "metrics": {"b": [2, 1, 4, 3, 6, 5], "a": [1, 1, 2, 2, 3, 3]}}),
    ("POST", "/correlate", {"model": 1, "items": 2, "zeta": 3, "alpha": 4, "beta": 5, "gamma": 6}),
    ("POST", "/score", {"model": "length", "items": [{"context": [], "response": 5, "x": 1, "y": 2, "z": 3}], "w": 0}),
]


def test_answers_do_not_depend_on_the_process_string_hashing(baseline_store):
    answers = [subprocess.run([sys.executable, "-c", ANSWERS, str(baseline_store), json.dumps(REQUESTS)], cwd=REPO,
                              env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True,
                              check=True).stdout for seed in ("0", "1")]
    assert len(json.loads(answers[0])) == len(REQUESTS)
    assert answers[0] == answers[1]
