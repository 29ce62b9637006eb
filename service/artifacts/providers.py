"""Which execution provider each kind of graph runs on, and why: DIALSCORE_PROVIDERS read against this
build, this CPU and OpenVINO's runtime.

The sentence encoders (the transformers, where nearly all the time goes) take the first usable provider
of the list; every other graph (the GRU models, the small heads) takes the list without OpenVINO: they
cost microseconds a row, and on the CPU EP their scores stay independent of the batch to the bit.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from service.artifacts import openvino
from service.config import AUTO_PROVIDERS as AUTO

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
# `auto` in DIALSCORE_PROVIDERS stands for these, in order; OpenVINO only where openvino.gains says so.
AUTO_ORDER = (CUDA, openvino.EP, CPU)


@dataclass(frozen=True)
class ProviderChoice:
    providers: list[str]  # for every graph but the encoders, in order (CPU last)
    encoder: str  # the encoders' provider
    reason: str  # why the encoders run there, for GET /models, the log and make bench


def choose_providers(requested: Sequence[str], available: Sequence[str], flags: set[str],
                     find_openvino: Callable[[], openvino.Found]) -> ProviderChoice:
    """`requested`: DIALSCORE_PROVIDERS (names, `auto` among them); `available`: this build's providers
    (ort.get_available_providers(), which does not list OpenVINO's own runtime); `flags`: the CPU's
    features; `find_openvino`: openvino.found, called only where OpenVINO is asked for (it imports it)."""
    names: list[str] = []
    for name in requested:
        for expanded in (AUTO_ORDER if name == AUTO else (name,)):
            if expanded not in names:
                names.append(expanded)
    general = [p for p in names if p in available and p != openvino.EP] or [CPU]
    if CPU not in general:
        general.append(CPU)
    by_auto = AUTO in requested
    asked = f"DIALSCORE_PROVIDERS={','.join(requested)}"
    passed_over: list[str] = []
    for name in names:
        if name == openvino.EP:
            gain = openvino.gains(flags)
            if by_auto and not gain:  # asked first: a loaded runtime costs every worker memory
                passed_over.append(openvino.why_not(flags))
                continue
            runtime = find_openvino()
            if not runtime.usable:
                passed_over.append(runtime.reason)
            else:
                why = f"the CPU reports {gain}" if by_auto else f"{asked} names it"
                return ProviderChoice(general, name, f"{'auto: ' if by_auto else ''}{why}; {runtime.reason}")
        elif name in available:
            return ProviderChoice(general, name, "; ".join([f"auto: {name}" if by_auto else asked, *passed_over]))
    return ProviderChoice(general, CPU, "; ".join([f"{asked}: none available, CPU", *passed_over]))
