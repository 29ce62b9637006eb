"""The benchmark's report of where it ran: providers per model, and the GPU when one is used."""
from service.bench import _gpu_names, _providers_line


def test_providers_are_grouped_so_a_cpu_fallback_shows():
    served = {"adem": {"providers": ["CUDAExecutionProvider", "CPUExecutionProvider"]},
              "ruber": {"providers": ["CPUExecutionProvider"]},
              "length": {"providers": ["CPUExecutionProvider"]}}
    assert _providers_line(served) == ("CPUExecutionProvider: 2 models; "
                                       "CUDAExecutionProvider,CPUExecutionProvider: 1 models")


def test_no_gpu_line_when_nothing_runs_on_cuda():
    assert _gpu_names({"length": {"providers": ["CPUExecutionProvider"]}}) == ""


def test_every_text_of_a_default_batch_is_distinct_and_the_reranking_one_shares_its_context():
    from service.bench import items_for

    items = items_for("referenced", 32)
    texts = [t for i in items for t in (*i["context"], i["response"], i["reference"])]
    assert len(set(texts)) == len(texts)  # the encode cache saves nothing: the figure to size by
    shared = items_for("referenced", 32, shared_context=True)
    assert len({tuple(i["context"]) for i in shared}) == 1 and len({i["response"] for i in shared}) == 32
    turns = [t["text"] for i in items_for("dialogue", 4) for t in i["turns"]]
    assert len(set(turns)) == len(turns)


def test_memory_is_read_from_the_workers_of_a_process(tmp_path):
    import os
    import subprocess
    import sys

    from service.bench import MemorySampler, _pss_kib, _workers_of

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in _workers_of(os.getpid())
        assert _pss_kib(child.pid) > 0
        worker, total = MemorySampler(os.getpid()).sample()
        assert 0 < worker <= total
    finally:
        child.kill()
        child.wait()
