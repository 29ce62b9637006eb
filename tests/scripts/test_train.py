"""scripts/train.sh (`make train`) retrains every stacked recipe, those on mpnet-base where it is built."""
from __future__ import annotations

import re
from pathlib import Path

from training.unref.recipes import MPNET, RECIPES

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "train.sh"


def test_make_train_retrains_every_stacked_recipe_behind_its_encoders_guard() -> None:
    lines = SCRIPT.read_text(encoding="utf-8").splitlines()
    guard = next(i for i, line in enumerate(lines) if "model_store/mpnet-base/" in line and line.lstrip().startswith("if"))
    trained: dict[str, int] = {}
    for number, line in enumerate(lines):
        found = re.search(r"train-unref --model (.*?)(?: --|$)", line)
        for name in found.group(1).split() if found else ():
            trained[name] = number
    assert set(trained) == set(RECIPES)
    for name, number in trained.items():
        inside = guard < number and lines[number].startswith("        ")  # the guard's block, indented twice
        assert inside == (MPNET in RECIPES[name].uses), name


def test_a_step_name_train_sh_does_not_know_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """`STEPS="adem autojudge"` (the step is adem-autojudge) matched no step: nothing trained, exit 0."""
    import subprocess

    done = subprocess.run(["bash", str(SCRIPT)], env={"STEPS": "adem autojudge", "PATH": "/usr/bin:/bin",
                                                      "PY": str(tmp_path / "no-python")},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no step 'adem'" in done.stderr and "adem-autojudge" in done.stderr, done
    assert "===" not in done.stdout  # no step started


def test_make_train_calibrates_the_models_whose_folders_ship_a_table() -> None:
    """Without --models it also wrote tables for unref-mpnet and unref-mpnet-minilm, which ship none, and
    docs/calibration.md's base-rate line named another first model."""
    from tests.conftest import MODEL_STORE

    text = SCRIPT.read_text(encoding="utf-8")
    lists = re.findall(r"calibrated=\(([^)]*)\)", text)
    shipped = {path.parent.name for path in MODEL_STORE.glob("*/human_percentile.json")}
    assert '--models "${calibrated[@]}"' in text and len(lists) == 2
    assert set(lists[1].split()) == shipped and set(lists[0].split()) == shipped - {"unref-mpnet-commercial"}
    documented = re.search(r"calibrate --models ([a-z0-9 -]+) --", (SCRIPT.parents[1] / "docs" / "calibration.md").read_text())
    assert lists[1].split() == documented.group(1).split()  # the committed run's order
