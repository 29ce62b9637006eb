"""argparse types for the training commands' numbers: a bad value is a usage error (exit 2, one
line naming the option), not a traceback from deep in torch after minutes of loading, nor a run
that "succeeds" with nothing trained (`--steps 0`) or with NaN weights (`--lr nan`)."""
from __future__ import annotations

import argparse
import math
import os
import re
import tempfile
from pathlib import Path


class SetupError(Exception):
    """A set-up error found while running (an input that is not what it claims to be, a store the
    command would leave inconsistent): `python -m training` prints it as one line and exits 2, as
    argparse does for a bad option, instead of a traceback."""


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _bounded(parse, low: float, strict: bool, words: str):
    """An argparse type: `parse`d, then at least `low` (above it where `strict`)."""
    def check(text: str):
        value = parse(text)
        if value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(f"must be {words}, not {value:g}")
        return value
    return check


positive_int = _bounded(_int, 1, False, "1 or more")
count = _bounded(_int, 0, False, "0 or more")  # 0 usually means 'all' or 'off', as each option's help says
at_least_two = _bounded(_int, 2, False, "2 or more")
positive_float = _bounded(_float, 0.0, True, "above 0")
MAX_THREADS = 256  # torch's intra-op pool: far larger counts crash it or crawl


def threads(text: str) -> int:
    """--threads: torch intra-op threads, 1 to MAX_THREADS."""
    value = positive_int(text)
    if value > MAX_THREADS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_THREADS}, not {value}")
    return value
nonnegative_float = _bounded(_float, 0.0, False, "0 or more")


def version(text: str) -> str:
    """An artifact version as /models and every score's `version` show it: letters, digits and . _ + -."""
    if not re.fullmatch(r"[0-9A-Za-z][0-9A-Za-z._+-]{0,63}", text):
        raise argparse.ArgumentTypeError(f"{text!r}: a version is 1-64 letters, digits and . _ + - (e.g. 2026.11.2)")
    return text


def names_from(known: "tuple[str, ...] | list[str]"):
    """A comma-separated list of names, each one of `known` (e.g. --sets of the judgement sets)."""
    def parse(text: str) -> str:
        names = [n for n in text.split(",") if n]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown: {', '.join(unknown)} (known: {', '.join(known)})")
        if not names:
            raise argparse.ArgumentTypeError("name at least one")
        return ",".join(names)
    return parse


# Folders the options' checks made, top first: a run that fails takes them back if they are still
# empty (settle_made_folders), so that a typo'd or failed run leaves no empty --out behind. Two runs
# started at once into one new folder can race: the first to fail removes it while the second, whose
# check found it there, still means to write into it (and then fails naming it). Runs that share a
# new output folder should make it first.
_made_folders: list[Path] = []


def settle_made_folders(failed: bool) -> None:
    """After a run: if it failed, remove the folders its option checks made that are still empty,
    deepest first; either way forget them (a later command in the same process starts afresh)."""
    while _made_folders:
        folder = _made_folders.pop()
        if failed:
            try:
                folder.rmdir()
            except OSError:  # something was written there, or it is gone: kept as it is
                pass


def _writable_folder(folder: Path) -> None:
    missing = [f for f in (folder, *folder.parents) if not f.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _made_folders.extend(reversed(missing))
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot create {folder}: {exc.strerror or exc}") from None
    # A file really made and dropped, not os.access: root passes that check everywhere, /proc included.
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{folder} is not writable: {exc.strerror or exc}") from None


def output_file(text: str) -> Path:
    """A file the command will write when its work is done: its folder is made and checked now,
    so that a typo fails in a second, not after the hours of work before the write."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a folder; name a file")
    _writable_folder(path.parent if str(path.parent) else Path("."))
    return path


def output_dir(text: str) -> Path:
    """A folder the command will write into; made and checked now (see output_file)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a file; name a folder")
    _writable_folder(path)
    return path


def input_file(text: str) -> Path:
    """A file the command reads only after its long work (minilm-report's --tried): checked now."""
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{path} is not a file" if path.exists() else f"no file {path}")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"{path} is not readable")
    return path


def without_figures(argv: list[str]) -> list[str]:
    """A command line as a card records it: without --figures (where a copy of the card's figures went)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--figures":
            skip = True
        elif not arg.startswith("--figures="):
            out.append(arg)
    return out


def check_output_file(parser: argparse.ArgumentParser, option: str, path: Path | None) -> None:
    """output_file's check for a path chosen after parsing (a default that depends on other options):
    a usage error now rather than a failed write after the work."""
    if path is None:
        return
    try:
        output_file(str(path))
    except argparse.ArgumentTypeError as exc:
        parser.error(f"argument {option}: {exc}")
