"""The machine the load test names: every flag the CPU speeds hinge on that the CPU reports."""
from benchmarks.loadtest import report
from service.artifacts.hardware import cpu_flags


def test_the_cpu_is_named_with_every_flag_the_speeds_hinge_on_that_it_reports():
    assert {"avx2", "avx512_vnni", "avx512_bf16", "amx_bf16"} <= set(report.FLAGS)
    info = report.cpu()
    assert info["flags"] == [flag for flag in report.FLAGS if flag in cpu_flags()]
    assert info["cores"] >= 1 and info["model"]
