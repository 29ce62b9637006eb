"""json_body.find_problem: lone surrogates and nesting, on bodies as json.loads returns them."""
import json

import pytest

from service.json_body import NotJson, RepeatedKey, find_problem, parse_object


def _check(raw: bytes, depth: int = 32):
    return find_problem(json.loads(raw), raw, depth)


def test_clean_bodies_pass_including_surrogate_pairs() -> None:
    assert _check(b'{"items": [{"context": ["hi \\ud83d\\ude00"], "response": "\xf0\x9f\x98\x80"}]}') is None
    assert _check(json.dumps({"a": [[[1]]], "b": {"c": "d"}}).encode()) is None


def test_lone_surrogates_are_named_by_path_in_values_and_keys() -> None:
    problem = _check(b'{"items": [{"context": ["ok", "x \\udc00"]}]}')
    assert problem.path == "items.0.context.1" and "\\udc00" in problem.message and not problem.too_deep
    assert _check(b'{"scores": {"\\ud800": [1]}}').path == "scores.\\ud800"  # escaped: the path is sent back in errors, and must be text
    assert _check(b'"\\ud800"')[0] == "(body)"


def test_depth_is_counted_from_the_body() -> None:
    """The body is level 1: a limit of 5 admits the five levels of a dialogue body, and no sixth."""
    assert _check(b"[" * 5 + b"]" * 5, depth=5) is None
    assert _check(b"[" * 6 + b"]" * 6, depth=5).too_deep
    problem = _check(b'{"a": ' + b"[" * 6 + b"]" * 6 + b"}", depth=5)
    assert problem.path == "a.0.0.0.0" and "5 levels" in problem.message  # its fifth list is the sixth level
    assert problem.too_deep  # a limit: the service answers 413 too_large


def test_depth_counts_containers_whatever_else_the_body_holds() -> None:
    """A dialogue body at exactly the limit passes with or without an escaped emoji (json.dumps's default
    writing of one), which makes the walk read strings: strings are never a level of their own."""
    for text in ("hi", "hi \U0001F600"):
        body = json.dumps({"model": "mh", "items": [{"turns": [{"speaker": "user", "text": text},
                                                              {"speaker": "bot", "text": "ok"}]}]}).encode()
        assert _check(body, depth=4).too_deep and _check(body, depth=4).path.startswith("items.0.turns.")
        assert _check(body, depth=5) is None


def test_loads_refuses_a_key_repeated_in_one_object_anywhere() -> None:
    import pytest

    from service.json_body import RepeatedKey, loads

    assert loads(b'{"a": {"b": 1}, "c": [{"b": 2}, {"b": 3}]}') == {"a": {"b": 1}, "c": [{"b": 2}, {"b": 3}]}
    for body in (b'{"a": 1, "a": 1}', b'{"x": [{"b": 1, "c": 2, "b": 3}]}'):
        with pytest.raises(RepeatedKey):
            loads(body)


def test_a_repeated_key_or_an_unreadable_number_is_refused_with_where_it_stands() -> None:
    """The parser's hooks are not told where they are: the path comes from a second, lenient parse (the first
    place in document order; a key repeated elsewhere, or repeated in an object that also repeats another, is
    not mistaken for it)."""
    import pytest

    from service.json_body import NotJson, RepeatedKey, parse_object

    cases = [(b'{"a": {"b": 1, "c": 2}, "x": [{"b": 1}, {"c": 2, "b": 3, "c": 4}]}', RepeatedKey, "x.1.c"),
             (b'{"b": 1, "b": 2}', RepeatedKey, "b"),
             (b'{"n": [1, 2, {"m": ' + b"9" * 4301 + b'}]}', NotJson, "n.2.m"),
             (b'{"k": 1, "k": ' + b"9" * 4301 + b'}', NotJson, "k")]  # the number is read before the object closes
    for raw, error, path in cases:
        with pytest.raises(error) as raised:
            parse_object(raw, max_depth=8)
        assert raised.value.path == path, raw[:60]


def test_parse_is_one_reader_for_bodies_lines_files_and_manifests() -> None:
    """BOM, repeated keys, encodings, shape and nesting, answered the same by every reader (A3: the
    manifest took a repeated key, analysis files refused a BOM)."""
    import pytest

    from service.json_body import (BadText, NotAnObject, NotFinite, NotJson, NotUtf8, RepeatedKey, TooDeep, parse,
                                   parse_object)

    assert parse_object(b'\xef\xbb\xbf{"a": 1}', max_depth=4) == {"a": 1}
    assert parse(b"[1, 2]", max_depth=4) == [1, 2]
    cases = [(b'{"a": 1, "a": 2}', RepeatedKey), ('{"a": 1}'.encode("utf-16"), NotUtf8), (b'{"a": ', NotJson),
             (b"[1]", NotAnObject), (b'{"a": [[[[[1]]]]]}', TooDeep), (b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}", TooDeep),
             (b'{"a": "\\ud800"}', BadText),
             # an array is not an object at any depth, the parser's recursion limit included
             (b"[" * 50 + b"]" * 50, NotAnObject), (b"\n" + b"[" * 100_000 + b"]" * 100_000, NotAnObject),
             (b"\xef\xbb\xbf" + b"[" * 100_000, NotAnObject)]
    for raw, error in cases:
        with pytest.raises(error):
            parse_object(raw, max_depth=4)
    with pytest.raises(TooDeep) as deep:
        parse_object(b'{"a": [[[[[1]]]]]}', max_depth=4)
    assert deep.value.path == "a.0.0.0"  # the body is level 1: its fourth list is the fifth
    assert parse_object(b'{"a": NaN}', max_depth=4)["a"] != 0
    with pytest.raises(NotFinite):
        parse_object(b'{"a": 1e999}', max_depth=4, finite=True)


def test_text_nested_past_the_limit_before_its_syntax_error_is_too_deep_on_every_python() -> None:
    """Which the parser meets first, the nesting or the error, hung on its recursion limit: `[` x 5,000 was
    TooDeep on 3.11 (1,000 frames) and NotJson on 3.13 (C's larger limit), `[` x 100 NotJson on both. The
    depth the text reached before its error decides, on any Python; strings are not levels."""
    import pytest

    from service.json_body import NotJson, TooDeep, parse

    for raw in (b"[" * 5, b"[" * 100, b"[" * 5000, b'{"a": ' * 100, b'{"a": [{"b": [[1, 2]], "c": {"d": [[[x',
                b'[[[[[1]]]]] [', b"[" * 1200 + b'"' + b"]" * 1200):
        with pytest.raises(TooDeep):
            parse(raw, max_depth=4)
    for raw in (b"[[[[", b'{"a": [[[1]]], "b": [[[2]]], "c": ', b'["[[[[[[[[", "{{{{{{{{" x', b'{"a": "\\"[[[[[[['):
        with pytest.raises(NotJson):
            parse(raw, max_depth=4)


def test_a_reader_that_refuses_nan_names_where_it_stands() -> None:
    """HTTP bodies (constants=False): NaN, Infinity and -Infinity are not JSON, so they are refused as
    text with their path, wherever they stand; 1e999 is JSON (the schemas refuse its value), and a NaN
    inside a string is text. Analysis files still read the words (Python's json.dump writes them)."""
    import math

    import pytest

    from service.json_body import BadText, parse, parse_object

    for raw, path in [(b'{"a": NaN}', "a"), (b'{"a": [1, {"b": [Infinity]}]}', "a.1.b.0"),
                      (b'{"a": -Infinity}', "a"), (b"NaN", "(body)")]:
        with pytest.raises(BadText) as refused:
            parse_object(raw, max_depth=8, constants=False)
        assert refused.value.path == path and "not a JSON number" in str(refused.value)
    assert math.isinf(parse_object(b'{"a": 1e999}', max_depth=8, constants=False)["a"])
    assert parse_object(b'{"a": "NaN Infinity"}', max_depth=8, constants=False) == {"a": "NaN Infinity"}
    assert math.isnan(parse(b'{"a": NaN}', max_depth=8)["a"])


def test_a_syntax_error_says_where_once() -> None:
    """json's own messages for these end in "at", before the position the reader appends."""
    import pytest

    from service.json_body import NotJson, parse

    for raw, said in ((b'{"a": "abc', "Unterminated string starting at line 1 column 7"),
                      (b'{"a": "a\x01b"}', "Invalid control character at line 1 column 9")):
        with pytest.raises(NotJson) as caught:
            parse(raw, max_depth=5)
        assert str(caught.value) == said


@pytest.mark.parametrize("raw, error, path", [
    # the object repeating another key (a) holds the one that raised (q.b): name b's place, not a's
    (b'{"p": {"a": 1, "a": 2, "q": {"b": 1, "b": 2}}}', RepeatedKey, "p.q.b"),
    # two places repeat the key: the first in document order
    (b'{"a": [{"k": 1, "k": 2}], "b": {"k": 1, "k": 2}}', RepeatedKey, "a.0.k"),
    (b'{"n": [' + b"9" * 4301 + b", " + b"8" * 4301 + b"]}", NotJson, "n.0"),
])
def test_located_names_the_first_place_of_the_key_that_raised(raw, error, path):
    for constants in (True, False):
        with pytest.raises(error) as raised:
            parse_object(raw, max_depth=8, constants=constants)
        assert raised.value.path == path


def test_a_bare_long_number_is_located_at_the_body():
    with pytest.raises(NotJson) as raised:
        parse_object(b"9" * 4301, max_depth=8)
    assert raised.value.path == "(body)"


def test_a_byte_order_mark_before_a_blank_first_line_leaves_it_blank(tmp_path) -> None:
    """`dialscore score` failed such a file with 'line 1: empty line' (exit 1) and a file of a BOM alone, where
    the same files without the mark were read: blank lines are left out."""
    from service.json_body import jsonl_lines

    (tmp_path / "a.jsonl").write_bytes(b'\xef\xbb\xbf\n{"a": 1}\n')
    (tmp_path / "b.jsonl").write_bytes(b"\xef\xbb\xbf")
    (tmp_path / "c.jsonl").write_bytes(b'\xef\xbb\xbf{"a": 1}\n')
    assert list(jsonl_lines(tmp_path / "a.jsonl")) == [(2, b'{"a": 1}\n')]
    assert list(jsonl_lines(tmp_path / "b.jsonl")) == []
    assert list(jsonl_lines(tmp_path / "c.jsonl")) == [(1, b'{"a": 1}\n')]


@pytest.mark.parametrize("raw, path", [
    # the parent repeats its own key too, and the value holding the place comes first, or second
    (b'{"a": {"b": 1, "b": 2}, "a": 3}', "a.b"),
    (b'{"a": 3, "a": {"b": 1, "b": 2}}', "a.b"),
    (b'{"items": [{"x": 1}, {"r": {"t": 1, "t": 2}, "r": 0}]}', "items.1.r.t"),
])
def test_located_finds_a_repeated_key_under_a_key_repeated_too(raw, path):
    with pytest.raises(RepeatedKey) as raised:
        parse_object(raw, max_depth=8)
    assert raised.value.path == path
