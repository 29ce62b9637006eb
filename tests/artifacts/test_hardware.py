"""The machine's cores and CPU features (service/artifacts/hardware.py)."""
import os

import pytest

from service.artifacts.hardware import cgroup_cpu_limit, int8_dot_products, usable_cores


@pytest.mark.parametrize(("files", "limit", "cores"), [
    ({"cpu.max": "100000 100000\n"}, 1.0, 1),  # cgroup v2: a limit of 1 CPU
    ({"cpu.max": "50000 100000\n"}, 0.5, 1),  # half a CPU still runs one thread
    ({"cpu.max": "max 100000\n"}, None, None),  # no limit: the affinity
    ({"cpu.max": "max\n"}, None, None),
    ({"cpu/cpu.cfs_quota_us": "100000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1.0, 1),  # cgroup v1
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None, None),
    ({"cpu.max": "6400000 100000\n"}, 64.0, None),  # a limit above the cores: the affinity
    ({}, None, None),  # no cgroup files: not in a container
])
def test_a_containers_cpu_limit_bounds_the_cores_used(tmp_path, files, limit, cores) -> None:
    """A pod sees the node's cores; its CPU limit, not they, is what its thread pools may use."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cgroup_cpu_limit(tmp_path) == limit
    assert usable_cores(tmp_path) == (cores or len(os.sched_getaffinity(0)))


def test_the_strongest_integer_dot_product_the_cpu_reports_is_named():
    assert int8_dot_products("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n") == "avx2"
    assert int8_dot_products("flags : avx2 avx512f avx512_vnni amx_int8\nflags : avx2\n") == "amx_int8"
    assert int8_dot_products("Features\t: fp asimd asimddp sha2\n") == "asimddp"
    assert int8_dot_products("flags : fpu sse2 sse4_2\n") is None
    assert int8_dot_products("") is None
