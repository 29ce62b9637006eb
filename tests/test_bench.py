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
