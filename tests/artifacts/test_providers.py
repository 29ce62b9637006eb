"""Which provider the encoders and the other graphs get (choose_providers), and the OpenVINO plugin as
this machine finds it."""
from __future__ import annotations

import onnxruntime as ort
import pytest

from service.artifacts import openvino
from service.artifacts.providers import CPU, CUDA, choose_providers
from service.artifacts.runtime import Runtime, RuntimeSettings, cpu_flags

OFFERED = openvino.Plugin(devices=["an Intel CPU"], reason="the plugin offers the CPU (Intel)")
REFUSED = openvino.Plugin(reason="the plugin offers no device for this CPU (AMD): its factory serves Intel devices only")
ABSENT = openvino.Plugin(reason="onnxruntime-ep-openvino is not installed")
CPU_BUILD, GPU_BUILD = [CPU], [CUDA, CPU]
XEON, ZEN2 = {"avx2", "avx512_vnni", "amx_bf16", "amx_int8"}, {"avx2"}


def choose(requested: tuple[str, ...], plugin: openvino.Plugin, flags: set[str] = XEON, available: list[str] = CPU_BUILD):
    return choose_providers(requested, available, flags, lambda: plugin)


def test_auto_takes_openvino_for_the_encoders_only_on_a_cpu_with_amx_or_avx512_vnni() -> None:
    chosen = choose(("auto",), OFFERED)
    assert (chosen.encoder, chosen.providers) == (openvino.EP, [CPU])
    assert chosen.reason == "auto: the CPU reports amx_bf16; the plugin offers the CPU (Intel)"
    assert choose(("auto",), OFFERED, {"avx2", "avx512_vnni"}).encoder == openvino.EP
    avx2 = choose_providers(("auto",), CPU_BUILD, ZEN2, lambda: pytest.fail("the plugin is not loaded for nothing"))
    assert avx2.encoder == CPU and "neither AMX nor AVX-512 VNNI" in avx2.reason


def test_auto_falls_back_to_the_cpu_ep_and_says_why() -> None:
    for plugin in (REFUSED, ABSENT):
        chosen = choose(("auto",), plugin)
        assert (chosen.encoder, chosen.reason) == (CPU, f"auto: {CPU}; {plugin.reason}")


def test_cuda_comes_before_openvino_and_the_plugin_is_not_loaded_for_it() -> None:
    def no_plugin() -> openvino.Plugin:
        raise AssertionError("the plugin is loaded only where OpenVINO is asked of it")

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
    assert openvino.inference_precision(XEON) == "bf16"
    assert openvino.inference_precision({"avx512_vnni", "avx512_bf16"}) == "bf16"
    assert openvino.inference_precision({"avx512_vnni"}) == openvino.inference_precision(ZEN2) == "f32"
    # int8 weights run as int8 either way: a bf16 hint only adds conversions (slower on an AMX Xeon)
    assert openvino.inference_precision(XEON, weights="int8") == "f32"


def test_the_plugin_as_this_machine_finds_it() -> None:
    """Registered once (a second call gives the same answer, not ONNX Runtime's refusal of a second
    registration), and usable exactly where ONNX Runtime lists an OpenVINO device for the CPU."""
    pytest.importorskip("onnxruntime_ep_openvino", reason="onnxruntime-ep-openvino is not installed here")
    found = openvino.plugin()
    assert openvino.plugin() is found
    listed = [d for d in ort.get_ep_devices() if d.ep_name == openvino.EP and d.device.type == ort.OrtHardwareDeviceType.CPU]
    assert found.usable == bool(listed), found.reason
    assert found.version and found.reason


def test_a_runtime_on_auto_reports_what_its_encoders_run_on() -> None:
    runtime = Runtime(RuntimeSettings(providers=("auto",), intra_op_threads=1))
    gain = openvino.gains(cpu_flags())
    expected = openvino.EP if openvino.plugin().usable and gain else CPU
    assert runtime.choice.encoder == expected
    assert runtime.providers == [CPU]  # the CPU build: every other graph on the CPU EP
