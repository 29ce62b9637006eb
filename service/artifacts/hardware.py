"""What the machine offers this process: its usable cores (affinity within a container's CPU limit)
and the CPU's features (/proc/cpuinfo), which choose threads, providers and the int8 graph."""
from __future__ import annotations

import math
import os
from pathlib import Path


def usable_cores(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """The cores this process may use: its CPU affinity, within a container's CPU limit rounded up (a pod
    limited to 2 CPUs on a 64-core node sees 64 cores, and 64 encoder runs would fight over 2)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    limit = cgroup_cpu_limit(cgroup)
    return max(1, min(cores, math.ceil(limit))) if limit else cores


def cgroup_cpu_limit(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPU limit in CPUs at the root of the cgroup filesystem (v2 `cpu.max`, else v1's CFS quota), or None:
    in a container (its own cgroup namespace, as in a pod) that root is the container's cgroup; a limit set
    on a parent cgroup only, as systemd's CPUQuota= on a service, is not seen."""
    try:
        quota, period = (root / "cpu.max").read_text(encoding="ascii").split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text(encoding="ascii"))
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text(encoding="ascii"))
    except (OSError, ValueError):
        return None
    return quota / period if quota > 0 and period > 0 else None


# Integer dot-product instruction sets, strongest first, as /proc/cpuinfo names them (x86 `flags`, Arm
# `Features`): ONNX Runtime's int8 matrix kernels (MLAS) use AMX, AVX-512 VNNI, AVX-VNNI, AVX2's
# vpmaddubsw, Arm's i8mm and sdot/udot. With none of them its int8 products are no faster than float.
INT8_DOT_PRODUCTS = ("amx_int8", "avx512_vnni", "avx_vnni", "avx2", "i8mm", "asimddp")


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The features the CPU reports (`cpuinfo`: /proc/cpuinfo's text; x86 `flags`, Arm `Features`), empty
    where there is no /proc/cpuinfo to read."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
                cpuinfo = handle.read()
        except OSError:
            return set()
    reported: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            reported.update(value.split())
    return reported


def int8_dot_products(cpuinfo: str | None = None) -> str | None:
    """The strongest of INT8_DOT_PRODUCTS the CPU reports (`cpuinfo`: as cpu_flags), or None."""
    reported = cpu_flags(cpuinfo)
    return next((name for name in INT8_DOT_PRODUCTS if name in reported), None)
