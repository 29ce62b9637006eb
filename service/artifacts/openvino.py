"""ONNX Runtime's OpenVINO execution provider, a plugin (`onnxruntime-ep-openvino`): loading it, whether
`auto` takes it on this CPU, and the options its sessions get.

The plugin is registered once per process, in the worker (after gunicorn's fork, like every session).
Its device factory offers OpenVINO only for Intel devices: on another vendor's CPU it loads and offers
nothing, and the CPU EP serves.
"""
from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

import onnxruntime as ort

log = logging.getLogger(__name__)

EP = "OpenVINOExecutionProvider"
# CPU features on which OpenVINO beat ONNX Runtime's CPU EP on MiniLM and mpnet (docs/notes/2026-11-27-openvino.md),
# strongest first. AVX2 alone is not among them: there it was not measured, and the CPU EP is today's path.
GAINS = ("amx_bf16", "amx_int8", "avx512_vnni")
# Where the CPU has bf16 arithmetic, OpenVINO computes in bf16 by default; the hint makes it explicit,
# so that what GET /models reports is what was asked for.
BF16 = ("amx_bf16", "avx512_bf16")


@dataclass
class Plugin:
    """The plugin as this process found it: its CPU devices (empty where it offers none) and why."""

    devices: list[Any] = field(default_factory=list)
    reason: str = ""
    version: str | None = None

    @property
    def usable(self) -> bool:
        return bool(self.devices)


_plugin: Plugin | None = None
_lock = threading.Lock()


def plugin() -> Plugin:
    """The plugin, registered with ONNX Runtime on first call (ONNX Runtime refuses a second registration
    under the same name), and its CPU devices."""
    global _plugin
    with _lock:
        if _plugin is None:
            _plugin = _register()
        return _plugin


def _register() -> Plugin:
    try:
        import onnxruntime_ep_openvino as package
    except ImportError:
        return Plugin(reason="onnxruntime-ep-openvino is not installed")
    version = _version()
    try:
        ort.register_execution_provider_library(package.get_ep_name(), package.get_library_path())
    except Exception as exc:  # noqa: BLE001 - a plugin that fails to load leaves the CPU EP serving
        return Plugin(reason=f"the plugin did not load ({type(exc).__name__}: {exc})", version=version)
    found = [d for d in ort.get_ep_devices() if d.ep_name == EP]
    cpus = [d for d in found if d.device.type == ort.OrtHardwareDeviceType.CPU]
    if cpus:
        return Plugin(devices=cpus, reason=f"the plugin offers the CPU ({cpus[0].device.vendor})", version=version)
    vendors = sorted({d.device.vendor for d in ort.get_ep_devices() if d.device.type == ort.OrtHardwareDeviceType.CPU})
    return Plugin(reason=f"the plugin offers no device for this CPU ({', '.join(vendors) or 'unknown vendor'}): its "
                         "factory serves Intel devices only", version=version)


def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("onnxruntime-ep-openvino")
    except PackageNotFoundError:
        return None


def gains(flags: set[str]) -> str | None:
    """The strongest of GAINS the CPU reports, or None: where `auto` prefers OpenVINO."""
    return next((name for name in GAINS if name in flags), None)


def inference_precision(flags: set[str], weights: str = "fp32") -> str:
    """What OpenVINO computes in: f32 for a file of int8 weights (OpenVINO runs them as int8, and a bf16
    hint only adds conversions); for float weights bf16 where the CPU has bf16 arithmetic, else f32."""
    if weights == "int8":
        return "f32"
    return "bf16" if any(name in flags for name in BF16) else "f32"


def provider_options(threads: int, streams: int, precision: str) -> dict[str, str]:
    """Options of a session on the plugin: `threads` in all (the EP keeps as many infer requests, so
    concurrent runs do not wait for one another), `streams` runs at once (one per share of a request, as
    the CPU EP's parallel runs), and `precision` as OpenVINO's INFERENCE_PRECISION_HINT."""
    return {"num_of_threads": str(threads), "num_streams": str(streams),
            "load_config": json.dumps({"CPU": {"INFERENCE_PRECISION_HINT": precision}})}
