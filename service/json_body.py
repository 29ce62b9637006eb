"""The one reader of JSON text, for request bodies, bulk lines, analysis files and manifests.

UTF-8 only, a leading byte order mark dropped, each key once (parsers disagree on which of two values
wins), no lone UTF-16 surrogate (no Unicode character: tokenizers and UTF-8 encoding reject it),
nesting within a depth (the schemas and the error handler recurse), and where the reader asks, no
`NaN` or `Infinity` (not JSON). Each refusal is a JsonTextError subclass, which each caller maps to
its own answer (400 or 413, a bad line, a failed import, a failed model).
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any, NamedTuple

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class JsonTextError(ValueError):
    """Text that is not usable JSON; `path` names where inside the value, when the value was read."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class NotUtf8(JsonTextError):
    """Bytes that are not UTF-8 (json.loads would take UTF-16 or UTF-32 and let lone surrogates by)."""


class NotJson(JsonTextError):
    """The parser's own refusal: a syntax error."""


class TooDeep(JsonTextError):
    """Nested past the reader's depth limit, or past the parser's recursion limit (a limit, not bad text)."""


class NotAnObject(JsonTextError):
    """A valid JSON value that is not the object the reader wants; `found` names what it is."""

    def __init__(self, found: str) -> None:
        super().__init__(f"a JSON object is wanted, not {found}")
        self.found = found


class BadText(JsonTextError):
    """A string or key holding a lone UTF-16 surrogate, which is no Unicode character, or (where the
    reader refuses them) `NaN`, `Infinity` or `-Infinity`, which are no JSON number."""


class RepeatedKey(JsonTextError):
    """An object in the body names `key` twice."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the key {key!r} appears twice in one object")
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise RepeatedKey(key)
        obj[key] = value
    return obj


class NotFinite(JsonTextError):
    """A number JSON cannot carry: NaN or infinity, written as such or too large for a double."""


def _no_constant(name: str) -> Any:
    raise NotFinite(f"{name} is not a JSON number")


class _Constant:
    """What the parser makes of `NaN`, `Infinity` or `-Infinity` for a reader that refuses them: a
    marker the walk finds with its path (parse_constant is not told where it is)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


_CONSTANT_WORD = re.compile(rb"NaN|Infinity")


def _constant_message(value: _Constant) -> str:
    return f"{value.name} is not a JSON number; send a finite number (or null where the field allows none)."


TOO_LARGE = "too large for a double"  # a JSON number that overflows to infinity, as every reader names it


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotFinite(f"{text} is {TOO_LARGE}")
    return value


def loads(text: str | bytes, *, finite: bool = False) -> Any:
    """json.loads that raises RepeatedKey for an object with a repeated key and, with `finite`,
    NotFinite for NaN, Infinity or a number that overflows to infinity."""
    if not finite:
        return json.loads(text, object_pairs_hook=_unique)
    return json.loads(text, object_pairs_hook=_unique, parse_constant=_no_constant, parse_float=_finite_float)


class Problem(NamedTuple):
    """The first problem in a body: where, what, and whether it is a limit (nesting past
    `max_depth`: 413 too_large, as every limit GET /models lists) rather than bad JSON (400)."""

    path: str
    message: str
    too_deep: bool = False


def find_problem(data: Any, raw: bytes, max_depth: int) -> Problem | None:
    """The first problem in `data` (parsed from `raw`), or None. The walk is iterative, so safe on any
    depth the parser returns, and reads strings only when `raw` holds a surrogate escape at all (UTF-8
    bytes cannot encode one): a large ordinary body costs one pass over its containers."""
    strings = _SURROGATE_ESCAPE.search(raw) is not None
    constants = _CONSTANT_WORD.search(raw) is not None  # the words may stand only where a number can
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]  # the body is level 1, as DIALSCORE_MAX_JSON_DEPTH counts
    while stack:
        value, path, depth = stack.pop()
        if depth > max_depth and isinstance(value, (dict, list)):  # a string is visited for its text, not a level
            return Problem(path or "(body)", f"Nested deeper than {max_depth} levels.", too_deep=True)
        if isinstance(value, dict):
            for key, child in value.items():
                child_path = f"{path}.{key}" if path else str(key)
                message = _surrogate_message(key) if strings else None
                if message:  # the path names the key with its surrogate escaped, so it can be sent back
                    return Problem(_LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", child_path), message)
                if constants and isinstance(child, _Constant):
                    return Problem(child_path, _constant_message(child))
                if isinstance(child, (dict, list)) or (strings and isinstance(child, str)):
                    stack.append((child, child_path, depth + 1))
        elif isinstance(value, list):
            for index, child in enumerate(value):
                if constants and isinstance(child, _Constant):
                    return Problem(f"{path}.{index}" if path else str(index), _constant_message(child))
                if isinstance(child, (dict, list)) or (strings and isinstance(child, str)):
                    stack.append((child, f"{path}.{index}" if path else str(index), depth + 1))
        elif isinstance(value, str):
            message = _surrogate_message(value)
            if message:
                return Problem(path or "(body)", message)
    return None


def _surrogate_message(text: str) -> str | None:
    match = _LONE_SURROGATE.search(text)
    if match is None:
        return None
    return (f"Contains a lone UTF-16 surrogate (\\u{ord(match.group()):04x}) at character {match.start()}, "
            "which is not a Unicode character; send valid UTF-8 text.")


_BOM = b"\xef\xbb\xbf"  # UTF-8 byte order mark


def parse(raw: bytes, *, max_depth: int, finite: bool = False) -> Any:
    """The JSON value in `raw` held to every rule above, or a JsonTextError saying which it broke."""
    data = _load(raw, max_depth, finite, constants=True)
    _check(data, raw, max_depth)
    return data


def parse_object(raw: bytes, *, max_depth: int, finite: bool = False, constants: bool = True) -> dict[str, Any]:
    """`parse` for readers that want an object (a body, a bulk line, a manifest); the shape is checked
    before the walk, so a deep or odd array is answered as not an object. `constants=False` refuses
    `NaN`, `Infinity` and `-Infinity` as BadText naming their path."""
    try:
        data = _load(raw, max_depth, finite, constants)
    except TooDeep:
        # Too deep for the parser to finish: an array's shape is still known from its first byte,
        # and it is answered the same whatever its depth (50 levels or 100,000).
        if raw.removeprefix(_BOM).lstrip(b" \t\r\n").startswith(b"["):
            raise NotAnObject("an array") from None
        raise
    if isinstance(data, _Constant):
        raise BadText(_constant_message(data), "(body)")
    if not isinstance(data, dict):
        raise NotAnObject(_json_name(data))
    _check(data, raw, max_depth)
    return data


class _Flagged:
    """An unreadable number in a second, lenient parse: json's hooks are not told where they are, and a
    refusal in a batch of 500 items must name its item."""

    __slots__ = ()


class _Pairs(list):
    """An object of the lenient parse as its (key, value) pairs in document order: a dict would keep one
    of two values under a repeated key, and the one dropped may hold the place sought."""


def _located(text: str, error: JsonTextError, repeated: str | None) -> JsonTextError:
    """`error` with `path` set to where the text repeats the key `repeated` (None: holds an integer of more
    digits than Python reads), the first such place in document order; as it was where none is found."""
    def integer(digits: str) -> Any:
        try:
            return int(digits)
        except ValueError:
            return _Flagged() if repeated is None else 0

    try:
        data = json.loads(text, object_pairs_hook=_Pairs, parse_int=integer, parse_constant=lambda _: None)
    except (ValueError, RecursionError):
        return error
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _Flagged):
            error.path = path or "(body)"
            break
        children: list[tuple[object, Any]] = []
        if isinstance(value, _Pairs):
            seen: set[str] = set()
            for key, child in value:
                children.append((key, _Flagged() if key == repeated and key in seen else child))
                seen.add(key)
        elif isinstance(value, list):
            children = list(enumerate(value))
        stack.extend(reversed([(child, f"{path}.{key}" if path else str(key)) for key, child in children]))
    return error


_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]')
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _nested_past(text: str, max_depth: int) -> bool:
    """Whether `text`, the JSON read before a syntax error, opens containers deeper than `max_depth` (the
    body is level 1). Such text is refused for its depth, as if it went on to be well-formed: which error
    the parser meets first depends on its recursion limit, 1,000 Python frames on 3.11 and a larger C
    limit from 3.12, so `[` x 5,000 would be a limit on one Python and a syntax error on another."""
    if text.count("[") + text.count("{") <= max_depth:  # too few openers to be past it: no scan
        return False
    steps = (_STEP.get(token, 0) for token in _STRING_OR_BRACKET.findall(text))  # a string counts 0
    return max(accumulate(steps), default=0) > max_depth


def _load(raw: bytes, max_depth: int, finite: bool, constants: bool) -> Any:
    try:
        text = raw.decode("utf-8").removeprefix(_BOM.decode())  # RFC 8259 lets a reader drop a BOM; Windows tools write one
    except UnicodeDecodeError as exc:
        raise NotUtf8(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        if constants or finite:
            data = loads(text, finite=finite)
        else:  # each word becomes a marker that _check finds, with its path
            data = json.loads(text, object_pairs_hook=_unique, parse_constant=_Constant)
    except RepeatedKey as exc:
        raise _located(text, exc, exc.key) from None
    except JsonTextError:  # NotFinite: raised from inside the parser
        raise
    except json.JSONDecodeError as exc:
        if _nested_past(text[:exc.pos], max_depth):
            raise TooDeep(f"Nested deeper than {max_depth} levels.") from None
        # Some of json's messages end in "at" ("Unterminated string starting at"), before its own position
        raise NotJson(f"{exc.msg.removesuffix(' at')} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:  # the parser's own limit, far past any max_depth
        raise TooDeep(f"Nested deeper than {max_depth} levels.") from None
    except ValueError as exc:  # Python refuses an integer of more than 4,300 digits (CVE-2020-10735)
        if "digits" not in str(exc):
            raise
        raise _located(text, NotJson("a number has more digits than can be read (at most 4,300)"), None) from None
    return data


def _check(data: Any, raw: bytes, max_depth: int) -> None:
    problem = find_problem(data, raw, max_depth)
    if problem is not None:
        raise (TooDeep if problem.too_deep else BadText)(problem.message, problem.path)


def _json_name(value: Any) -> str:
    """A value's JSON type, as a person who wrote the JSON would name it."""
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def jsonl_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """A JSON-lines file's lines with their numbers, blank ones left out (an editor's or `echo >>`'s last
    newline): how `dialscore score` reads its input and the analysis reads its output."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if number == 1:
                raw = raw.removeprefix(_BOM)  # an editor's byte order mark before a blank first line
            if raw.strip():
                yield number, raw
