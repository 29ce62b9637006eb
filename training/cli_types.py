"""argparse types for the training commands' numbers: a bad value is a usage error (exit 2, one
line naming the option), not a traceback from deep in torch after minutes of loading, nor a run
that "succeeds" with nothing trained (`--steps 0`) or with NaN weights (`--lr nan`)."""
from __future__ import annotations

import argparse
import math


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
nonnegative_float = _bounded(_float, 0.0, False, "0 or more")


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
