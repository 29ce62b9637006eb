"""`python -m training dev-items`: the items evaluate scores, written for researchers to reuse."""
import json

import pytest

from training.evaluation import dev_items
from training.data.references import recover
from training.data.judgements import load_set

pytestmark = pytest.mark.data  # every test here reads the real data


def test_the_written_items_are_the_ones_evaluate_scores(tmp_path, capsys):
    out = tmp_path / "dev.jsonl"
    assert dev_items.main(["--sets", "holistic_eval", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    expected, _ = recover(load_set("holistic_eval", "dev"))
    assert [r["item_id"] for r in rows] == [i.item_id for i in expected]
    assert [r["references"] for r in rows] == [i.references for i in expected]
    # docs/evaluation.md: references recovered for 68 of its 72 items, 8 of them the judged reply itself
    assert (len(rows), sum(bool(r["references"]) for r in rows), sum(r["reply_is_reference"] for r in rows)) == (72, 68, 8)
    assert all(r["recovered"] == bool(r["references"]) for r in rows) and all(1 <= r["score"] <= 5 for r in rows)
    assert "holistic_eval: 72 items" in capsys.readouterr().out


def test_a_set_that_fails_to_load_leaves_the_last_file_whole(tmp_path):
    """Every set is read before the file is written: a set that fails leaves the last file whole."""
    import pytest

    out = tmp_path / "dev.jsonl"
    assert dev_items.main(["--sets", "holistic_eval", "--out", str(out)]) == 0
    before = out.read_bytes()
    with pytest.raises(OSError):
        dev_items.main(["--sets", "holistic_eval", "dstc7", "--out", str(out), "--data-dir", str(tmp_path / "none")])
    assert out.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["dev.jsonl"]


def test_a_symlinked_out_stays_a_link_and_its_target_gets_the_items(tmp_path):
    """--out naming a symlink: the link stays a link and its target gets the items."""
    target = tmp_path / "data" / "dev.jsonl"
    target.parent.mkdir()
    target.write_text("old\n", encoding="utf-8")
    link = tmp_path / "dev.jsonl"
    link.symlink_to(target)
    assert dev_items.main(["--sets", "holistic_eval", "--out", str(link)]) == 0
    assert link.is_symlink() and len(target.read_text(encoding="utf-8").splitlines()) == 72
    assert sorted(p.name for p in target.parent.iterdir()) == ["dev.jsonl"]


def test_a_link_to_a_folder_that_cannot_be_written_is_a_usage_error_before_the_sets_load(tmp_path, capsys):
    """A review: the link's own folder was checked, and the write into its target failed after every set."""
    import pytest

    link = tmp_path / "dev.jsonl"
    link.symlink_to("/proc/nope/dev.jsonl")
    with pytest.raises(SystemExit) as exited:
        dev_items.main(["--sets", "holistic_eval", "--out", str(link)])
    assert exited.value.code == 2 and "argument --out" in capsys.readouterr().err
    dangling = tmp_path / "new.jsonl"
    dangling.symlink_to(tmp_path / "made" / "dev.jsonl")  # a missing folder is made, as for a plain --out
    assert dev_items.main(["--sets", "holistic_eval", "--out", str(dangling)]) == 0
    assert dangling.is_symlink() and (tmp_path / "made" / "dev.jsonl").is_file()
