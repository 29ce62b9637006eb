"""The requirements files and constraints.txt agree: a pin changed in one only is caught here, not by a
pip conflict in CI or, worse, an image built with another version than the tests ran."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FILES = ("requirements.txt", "requirements-gpu.txt", "requirements-dev.txt", "training/requirements.txt")


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            # extras may follow the name, an environment marker the pin
            match = re.fullmatch(r"([A-Za-z0-9._-]+)(?:\[[A-Za-z0-9,._-]+\])?==([^\s;]+)(?:\s*;\s*\S.*)?", line)
            assert match, f"{path.name}: {line!r} is not pinned with =="
            found[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(2)
    return found


def test_every_requirement_is_pinned_and_agrees_with_the_constraints() -> None:
    constraints = pins(REPO / "constraints.txt")
    assert "torch" not in constraints  # its local label (+cpu) differs by index
    for name in FILES:
        for package, version in pins(REPO / name).items():
            if package in ("torch", "onnxruntime-gpu"):  # not in the CPU venv the constraints come from
                continue
            assert constraints.get(package) == version, (name, package, version, constraints.get(package))


def test_the_images_install_with_the_constraints() -> None:
    for dockerfile in ("Dockerfile", "Dockerfile.gpu"):
        text = (REPO / dockerfile).read_text(encoding="utf-8")
        assert "-c /tmp/constraints.txt" in text, dockerfile
    for ignore in (".dockerignore", "Dockerfile.gpu.dockerignore"):
        assert "!constraints.txt" in (REPO / ignore).read_text(encoding="utf-8")


def _store_patterns(ignore: str) -> set[str]:
    lines = (REPO / ignore).read_text(encoding="utf-8").splitlines()
    return {line.removeprefix("model_store/") for line in lines if line.startswith("model_store/")}


def test_the_cpu_image_leaves_out_the_built_encoders_the_wheel_leaves_out() -> None:
    """docs/deploy.md: /app/model_store holds the committed models; a 436 MB mpnet-base built in the
    checkout once went into the CPU image. The GPU image keeps them (it asks for the fp32 MiniLM)."""
    import tomllib

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = set(pyproject["tool"]["setuptools"]["exclude-package-data"]["model_store"])
    hidden = {"**/.*"}  # hidden build folders and partial files, which the wheel's "*/*" does not reach
    assert _store_patterns(".dockerignore") == wheel | hidden
    gpu = _store_patterns("Dockerfile.gpu.dockerignore")
    assert "minilm-l6/encoder-fp32.onnx" not in gpu and "mpnet-base/*.onnx" not in gpu and hidden <= gpu


def test_the_gpu_service_installs_what_the_cpu_service_does_but_its_runtime() -> None:
    """rapidfuzz went into requirements.txt alone at first: the GPU image would have served no rouge-l."""
    cpu, gpu = pins(REPO / "requirements.txt"), pins(REPO / "requirements-gpu.txt")
    assert cpu.pop("onnxruntime") == gpu.pop("onnxruntime-gpu")
    cpu.pop("openvino")  # the CPU encoders' runtime: a GPU worker's encoders run on CUDA
    assert cpu == gpu


def test_the_deploy_page_names_each_images_base() -> None:
    """docs/deploy.md said python:3.11-slim while the Dockerfile pinned python:3.11-slim-bookworm."""
    import re

    page = (REPO / "docs" / "deploy.md").read_text(encoding="utf-8")
    for dockerfile, arg, label in (("Dockerfile", "PYTHON_IMAGE", "CPU"), ("Dockerfile.gpu", "CUDA_IMAGE", "GPU")):
        [base] = re.findall(rf"^ARG {arg}=(\S+)$", (REPO / dockerfile).read_text(encoding="utf-8"), re.M)
        assert f"# {label}: {base} " in page or f"# {label}: {base}," in page, (dockerfile, base)
