"""Folding a dead worker's metric files into the archive keeps every total and drops the files."""
from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import Counter, Histogram
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.multiprocess import MultiProcessCollector

from service.observability import metrics
from tests.conftest import REPO


def _write(folder: Path, kind: str, pid: int, samples: dict[tuple[str, str], float]) -> None:
    store = MmapedDict(str(folder / f"{kind}_{pid}.db"))
    for (name, label), value in samples.items():
        store.write_value(mmap_key(name.removesuffix("_total"), name, ["model"], [label], "help"), value, 0.0)
    store.close()


def _totals(folder: Path) -> dict[tuple[str, tuple], float]:
    collected = MultiProcessCollector.merge([str(p) for p in folder.glob("*.db")], accumulate=True)
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for m in collected for s in m.samples}


def test_folding_keeps_every_total_and_removes_the_dead_workers_files(tmp_path: Path) -> None:
    _write(tmp_path, "counter", 101, {("items_total", "adem"): 3, ("items_total", "ruber"): 1})
    _write(tmp_path, "counter", 102, {("items_total", "adem"): 5})
    _write(tmp_path, "histogram", 101, {("seconds_bucket", "adem"): 2})
    _write(tmp_path, "counter", 103, {("items_total", "adem"): 7})  # still alive: not folded
    before = _totals(tmp_path)

    assert metrics.fold_dead_worker(101, str(tmp_path)) == 2
    assert metrics.fold_dead_worker(102, str(tmp_path)) == 1
    assert metrics.fold_dead_worker(102, str(tmp_path)) == 0  # already folded: nothing counted twice

    assert _totals(tmp_path) == before
    assert sorted(p.name for p in tmp_path.glob("*.db")) == [
        "counter_103.db", "counter_archive.db", "histogram_archive.db"]
    assert before[("items_total", (("model", "adem"),))] == 15


def test_every_metric_is_of_a_type_that_folding_adds_up() -> None:
    defined = [v for v in vars(metrics).values() if isinstance(v, (Counter, Histogram))]
    assert defined and all(m._type in metrics.FOLDED_TYPES for m in defined)
    others = [name for name, v in vars(metrics).items()
              if type(v).__module__ == "prometheus_client.metrics" and not isinstance(v, (Counter, Histogram))]
    assert not others, f"{others}: fold_dead_worker only knows {metrics.FOLDED_TYPES}"


def test_the_encoder_loads_counter_says_it_counts_loads_not_serving_workers() -> None:
    """Folded across recycles (above), it had counted 8 with 2 live workers after 6 recycles, while its
    comment said "how many serve it"."""
    assert "loads since the server started" in metrics.ENCODER_LOADS._documentation


def test_every_metric_is_in_the_deploy_guides_table() -> None:
    """docs/deploy.md "Metrics" lists each metric /metrics exports, with its labels, and no other."""
    exported = {(m._name + ("_total" if isinstance(m, Counter) else ""), m._labelnames)
                for m in vars(metrics).values() if isinstance(m, (Counter, Histogram))}
    rows = re.findall(r"^\| `(dialscore_\w+)` \|([^|]*)\|", (REPO / "docs" / "deploy.md").read_text(encoding="utf-8"),
                      re.M)
    listed = {(name, tuple(label.strip() for label in labels.split(",") if label.strip())) for name, labels in rows}
    assert listed == exported
