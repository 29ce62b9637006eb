"""One tiny pack of the real data (with fold-wise teacher scores on a few rows) and one CPU run of the device
script on it (the model on every group and one leave-one-set-out model), shared by the data tests here."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

HELD = "pe"  # a leave-one-set-out group (predictive_engagement) small enough for a quick run
TEACHER_ROWS = 5


@pytest.fixture(scope="session")
def tiny_pack(tmp_path_factory, data_dir) -> Path:
    from training.data.judgements import counted_once
    from training.rerank.pack import judged_rows, next_turn_groups, pack, read_teacher
    from training.unref.heads import GROUPS

    folder = tmp_path_factory.mktemp("rerank-pack")
    judged = judged_rows(limit=8)
    teacher = folder / "teacher.jsonl"
    with open(teacher, "w", encoding="utf-8") as handle:
        for context, replies in list(zip(judged.contexts, judged.replies))[:TEACHER_ROWS]:
            record = {"context": context, "reply": replies[0], "scores": {"all": 2.0, HELD: -2.0}}
            handle.write(json.dumps(record) + "\n")
    pack(folder / "pack", judged, next_turn_groups(contexts=10, pairs=30, seed=0), read_teacher(teacher), GROUPS,
         counted_once(sorted(set(judged.meta["set"]))), seed=0)
    return folder / "pack"


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, tiny_pack) -> tuple[Path, dict]:
    """The device script's CPU run: a few hundred pairs, short pairs, one epoch."""
    torch = pytest.importorskip("torch")
    from training.rerank.train import ALL, Config, run

    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("rerank-out")
    config = Config(epochs=1, rated_batch=6, max_length=32, max_reply=12, limit=12, models=[ALL, HELD])
    return out, run(tiny_pack, out, config, torch.device("cpu"), log=lambda *_: None)
