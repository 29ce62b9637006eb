"""Which provider the encoders and the other graphs get (choose_providers), and OpenVINO's runtime as
this machine finds it."""
from __future__ import annotations

import pytest

from service.artifacts import openvino
from service.artifacts.providers import CPU, CUDA, choose_providers
from service.artifacts.hardware import cpu_flags
from service.artifacts.runtime import Runtime, RuntimeSettings

OFFERED = openvino.Found(True, "OpenVINO 2026.4.1 runtime", "2026.4.1")
REFUSED = openvino.Found(False, "OpenVINO 2026.4.1 offers no CPU device (none)", "2026.4.1")
ABSENT = openvino.Found(False, "the openvino package is not installed")
CPU_BUILD, GPU_BUILD = [CPU], [CUDA, CPU]
XEON, ZEN5, ZEN2 = {"avx2", "avx512_vnni", "amx_bf16", "amx_int8"}, {"avx2", "avx512_vnni", "avx512_bf16"}, {"avx2"}
# A Sapphire Rapids-class Xeon whose hypervisor hides AMX: bf16 and fp16 arithmetic, VNNI, no amx_* flag
SPR_NO_AMX = {"avx2", "avx_vnni", "avx512_vnni", "avx512_bf16", "avx512_fp16"}


def choose(requested: tuple[str, ...], plugin: openvino.Found, flags: set[str] = XEON, available: list[str] = CPU_BUILD):
    return choose_providers(requested, available, flags, lambda: plugin)


def test_auto_takes_openvino_for_the_encoders_only_on_a_cpu_with_bf16_or_avx512_vnni() -> None:
    chosen = choose(("auto",), OFFERED)
    assert (chosen.encoder, chosen.providers) == (openvino.EP, [CPU])
    assert chosen.reason == "auto: the CPU reports amx_bf16; OpenVINO 2026.4.1 runtime"
    assert choose(("auto",), OFFERED, ZEN5).reason.startswith("auto: the CPU reports avx512_bf16")
    assert choose(("auto",), OFFERED, {"avx2", "avx512_vnni"}).encoder == openvino.EP
    avx2 = choose_providers(("auto",), CPU_BUILD, ZEN2, lambda: pytest.fail("OpenVINO is not imported for nothing"))
    assert avx2.encoder == CPU and "neither bf16 arithmetic nor AVX-512 VNNI" in avx2.reason


def test_auto_falls_back_to_the_cpu_ep_and_says_why() -> None:
    for plugin in (REFUSED, ABSENT):
        chosen = choose(("auto",), plugin)
        assert (chosen.encoder, chosen.reason) == (CPU, f"auto: {CPU}; {plugin.reason}")


def test_cuda_comes_before_openvino_and_the_plugin_is_not_loaded_for_it() -> None:
    def no_plugin() -> openvino.Found:
        raise AssertionError("OpenVINO is imported only where it is asked for")

    chosen = choose_providers(("auto",), GPU_BUILD, XEON, no_plugin)
    assert (chosen.encoder, chosen.providers, chosen.reason) == (CUDA, [CUDA, CPU], f"auto: {CUDA}")
    assert choose_providers((CPU,), CPU_BUILD, XEON, no_plugin).encoder == CPU


def test_dialscore_providers_forces_either() -> None:
    forced = choose((openvino.EP, CPU), OFFERED, ZEN2)  # no gain flag: named, so taken all the same
    assert forced.encoder == openvino.EP and forced.reason.startswith(f"DIALSCORE_PROVIDERS={openvino.EP},{CPU} names it")
    assert choose((CPU,), OFFERED).encoder == CPU
    refused = choose((openvino.EP, CPU), REFUSED)
    assert refused.encoder == CPU and REFUSED.reason in refused.reason
    assert choose((openvino.EP,), REFUSED).providers == [CPU]  # the CPU EP is always last


def test_openvino_computes_in_bf16_where_the_cpu_has_bf16_arithmetic() -> None:
    assert openvino.inference_precision(XEON) == openvino.inference_precision(ZEN5) == "bf16"
    assert openvino.inference_precision({"avx512_vnni"}) == openvino.inference_precision(ZEN2) == "f32"


def test_auto_keeps_the_cpu_ep_on_a_sapphire_rapids_class_core_without_amx() -> None:
    """There OpenVINO's bf16 ran slower than the CPU EP and its f32 no faster: `auto` took the slower path
    because AVX512_BF16 was read as bf16 arithmetic that pays. Forced, OpenVINO computes in f32
    (its faster precision there); with AMX reported the same core computes in bf16 on OpenVINO."""
    avoided = choose_providers(("auto",), CPU_BUILD, SPR_NO_AMX, lambda: pytest.fail("OpenVINO imported for nothing"))
    assert avoided.encoder == CPU
    assert "avx512_fp16 without AMX" in avoided.reason and "measured slower" in avoided.reason
    assert openvino.inference_precision(SPR_NO_AMX) == "f32"
    forced = choose((openvino.EP, CPU), OFFERED, SPR_NO_AMX)
    assert forced.encoder == openvino.EP
    with_amx = SPR_NO_AMX | {"amx_bf16", "amx_int8", "amx_tile"}
    assert choose(("auto",), OFFERED, with_amx).reason.startswith("auto: the CPU reports amx_bf16")
    assert openvino.inference_precision(with_amx) == "bf16"


def test_openvinos_runtime_as_this_machine_finds_it() -> None:
    """Imported once (the same answer again), and usable where the package is installed and offers the CPU."""
    pytest.importorskip("openvino", reason="the openvino package is not installed here")
    found = openvino.found()
    assert openvino.found() is found
    assert found.usable and found.version and found.reason.startswith(f"OpenVINO {found.version}")


def test_an_unwritable_cache_folder_leaves_each_worker_compiling_for_itself(tmp_path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert openvino.cache_dir(str(blocked / "cache")) is None
    assert openvino.cache_dir(str(tmp_path / "cache")) == tmp_path / "cache"


def test_a_runtime_on_auto_reports_what_its_encoders_run_on() -> None:
    runtime = Runtime(RuntimeSettings(providers=("auto",), intra_op_threads=1))
    gain = openvino.gains(cpu_flags())
    expected = openvino.EP if openvino.found().usable and gain else CPU
    assert runtime.choice.encoder == expected
    assert runtime.providers == [CPU]  # the CPU build: every other graph on the CPU EP
