"""`service.bulk.records`: input lines to items (bad lines reported, one each) and scores to strict-JSON records."""
from __future__ import annotations

import json
import math

import pytest

from service import bulk
from tests.bulk.conftest import GOOD, encoded, read_output, write_lines


def test_bad_lines_keep_their_id_and_a_lone_surrogate_is_one_bad_line(store, tmp_path):
    lines = encoded(GOOD) + [b'{"id": "keep-me", "context": [], "response": "x"}',
                             b'{"id": "\\ud800", "context": ["a"], "response": "b"}'] + encoded(GOOD)
    source = write_lines(tmp_path / "in.jsonl", lines)
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("length"), handle, output)
    records = read_output(output)
    assert [r["line"] for r in records] == list(range(1, 9)) and counts.errors == 2
    assert records[3]["id"] == "keep-me" and records[3]["error"]["code"] == "bad_line"
    assert "surrogate" in records[4]["error"]["message"] and "score" in records[5]


def test_a_line_that_repeats_a_key_is_one_bad_line(store, tmp_path):
    lines = encoded(GOOD) + [b'{"context": ["a"], "response": "short", "response": "a much longer reply"}']
    source = write_lines(tmp_path / "in.jsonl", lines)
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("length"), handle, output)
    records = read_output(output)
    assert counts.errors == 1 and "'response' appears twice" in records[-1]["error"]["message"]
    assert all("score" in r for r in records[:-1])


def test_non_finite_numbers_in_a_line_are_bad_lines_not_copied_into_the_output(store, tmp_path):
    """Python's json takes NaN, Infinity and 1e999 (-> inf); echoed as `id` they made the output not JSON."""
    good = b'{"context": ["hi"], "response": "hello", "reference": "hey"'
    lines = [good + b', "id": NaN}', good + b', "id": -Infinity}', good + b', "id": 1e999}',
             good + b', "rating": -1e999}', good + b', "id": 1e308}']
    source = write_lines(tmp_path / "in.jsonl", lines)
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("length"), handle, output)
    records = read_output(output)  # strict: the whole output is JSON
    assert counts.errors == 4 and [r["error"]["code"] for r in records[:4]] == ["bad_line"] * 4
    assert all(r["error"]["message"].startswith("not JSON") for r in records[:4])
    assert "NaN" in records[0]["error"]["message"] and "1e999" in records[2]["error"]["message"]
    assert records[4]["id"] == 1e308 and "score" in records[4]


def test_a_score_that_is_not_finite_is_a_scoring_error_not_invalid_json(store, tmp_path):
    scorer = store.get("length")

    class Broken:  # a model fault: NaN out of the network for one item
        name, version, kind, manifest = scorer.name, scorer.version, scorer.kind, scorer.manifest
        reads_reference = scorer.reads_reference

        def for_options(self, options):
            return self

        def item_problem(self, item, options):
            return None

        def bit_exact_across_batches(self):
            return True

        def resolve_options(self, options):
            return scorer.resolve_options(options)

        def score(self, items, options, cache):
            result = scorer.score(items, options, cache)
            result.scores = [math.nan if item.response == "x" else s for item, s in zip(items, result.scores)]
            return result

    items = [dict(GOOD[0], id=0), dict(GOOD[0], id=1, response="x"), dict(GOOD[0], id=2)]
    source = write_lines(tmp_path / "in.jsonl", encoded(items))
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        counts = bulk.run(Broken(), handle, output)
    records = read_output(output)
    assert [r["line"] for r in records] == [1, 2, 3] and counts.scored == 2 and counts.errors == 1
    assert records[1]["id"] == 1 and records[1]["error"]["code"] == "scoring_failed" and "score" not in records[1]


def test_lines_the_parser_or_the_writer_would_choke_on_are_one_bad_line_each(store, tmp_path):
    """Nesting past the parser's recursion limit, a lone surrogate in a key (named in the message):
    each is one bad_line record, and the good lines around them are scored."""
    good = encoded(GOOD[:1])[0]
    lines = [good, b'{"context": ["hi"], "response": "yo", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}", good,
             b'{"context": ["hi"], "response": "yo", "\\ud800": 1}', b'{"id": {"\\udfff": 1}, "response": "x"}', good]
    source = write_lines(tmp_path / "in.jsonl", lines)
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("length"), handle, output)
    records = read_output(output)
    assert [r["line"] for r in records] == [1, 2, 3, 4, 5, 6] and counts.errors == 3
    assert [("error" in r) for r in records] == [False, True, False, True, True, False]
    assert "nested deeper than" in records[1]["error"]["message"]
    assert "\\ud800" in records[3]["error"]["message"]  # the key, escaped


def test_a_file_that_opens_with_a_byte_order_mark_scores_its_first_line(store, tmp_path):
    lines = encoded(GOOD)
    lines[0] = b"\xef\xbb\xbf" + lines[0]
    source = write_lines(tmp_path / "in.jsonl", lines)
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("bleu4"), handle, tmp_path / "out.jsonl")
    assert counts.errors == 0 and "score" in read_output(tmp_path / "out.jsonl")[0]
    from service.bulk.records import parse_line

    with pytest.raises(ValueError, match="^empty line$"):  # a mark alone is an empty line, not a JSON error
        parse_line(b"\xef\xbb\xbf  ", store.get("bleu4"))


def test_bulk_refuses_a_missing_reference_exactly_where_the_api_does(store):
    """One answer to "does this model read `reference`?" (Scorer.reads_reference), asked by the API and bulk."""
    from service.bulk.records import BadLine, parse_line

    line = json.dumps({"context": ["hi"], "response": "hello"}).encode()
    for name in ("bleu4", "length"):
        scorer = store.get(name)
        assert scorer.reads_reference == (scorer.kind == "referenced") == ("reference" in scorer.manifest.requires)
        if scorer.reads_reference:
            with pytest.raises(BadLine, match="needs a reference"):
                parse_line(line, scorer)
        else:
            assert parse_line(line, scorer)[0].reference is None


def test_bulk_refuses_a_blank_reference_as_the_api_does(store):
    """An empty or whitespace reference leaves a referenced model nothing to compare with: one bad line."""
    from service.bulk.records import BadLine, parse_line

    for reference in ("", "  \n"):
        line = json.dumps({"id": "x", "context": ["hi"], "response": "hello", "reference": reference}).encode()
        with pytest.raises(BadLine, match="needs a reference"):
            parse_line(line, store.get("bleu4"))
        assert parse_line(line, store.get("length"))[0].reference == reference  # ignored where not read


def test_a_line_over_the_limit_is_one_too_large_record_and_the_rest_are_scored(store, tmp_path):
    """A runaway line (a corpus that lost its newlines) must not be read whole: a pod killed for
    memory would meet it again on every retry. It is streamed past and reported, nothing else lost."""
    huge = json.dumps({"id": "big", "context": ["a"], "response": "x" * 5000}).encode()
    lines = encoded(GOOD[:1]) + [huge] + encoded(GOOD[1:2])
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"".join(line + b"\n" for line in lines) + huge)  # the last one without a newline too
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("length"), handle, output, batch_size=2, max_line_bytes=1000)
    records = read_output(output)
    assert [r["line"] for r in records] == [1, 2, 3, 4] and counts.by_code == {"too_large": 2}
    assert "score" in records[0] and "score" in records[2]
    for record in (records[1], records[3]):
        assert record["error"] == {"code": "too_large",
                                   "message": f"the line is {len(huge)} bytes; the limit is 1000 (--max-line-bytes)"}
        assert "id" not in record  # the line was not read, so its id is not known
    exact = encoded([dict(GOOD[0], response="y" * 400)])[0]
    source.write_bytes(exact + b"\n")
    with open(source, "rb") as handle:
        bulk.run(store.get("length"), handle, tmp_path / "exact.jsonl", max_line_bytes=len(exact))
    assert "score" in read_output(tmp_path / "exact.jsonl")[0]  # the limit itself is allowed


def test_a_crlf_line_of_exactly_the_limit_is_read_and_one_byte_more_is_too_large(store, tmp_path):
    """The limit counts the line without its newline, \\r\\n as well as \\n."""
    line = encoded([dict(GOOD[0], response="y" * 100)])[0]
    source = tmp_path / "in.jsonl"
    source.write_bytes(line + b"\r\n" + line + b" \r\n" + line + b"\r\n")
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("length"), handle, tmp_path / "out.jsonl", max_line_bytes=len(line))
    records = read_output(tmp_path / "out.jsonl")
    assert counts.by_code == {"too_large": 1} and "score" in records[0] and "score" in records[2]
    assert records[1]["error"]["message"].startswith(f"the line is {len(line) + 1} bytes")


def test_a_bulk_lines_repeated_key_and_long_number_are_named_with_their_path():
    from service.bulk.records import read_object

    with pytest.raises(ValueError, match=r"^ambiguous JSON at a\.b: "):
        read_object(b'{"a": {"b": 1, "b": 2}}')
    with pytest.raises(ValueError, match=r"^not JSON \(n\.1: a number has more digits"):
        read_object(b'{"n": [1, ' + b"9" * 4301 + b"]}")


def test_a_file_whose_lines_end_in_cr_alone_is_named_as_such():
    """Lines ended by CR alone read as one line (CR is JSON whitespace): the refusal says why and what to do;
    CRLF lines and a CR inside a string's escapes are read as ever."""
    from service.bulk.records import read_object

    with pytest.raises(ValueError, match=r"^not JSON \(Extra data.*bare CR: JSONL lines end in LF or CRLF"):
        read_object(b'{"response": "a"}\r{"response": "b"}\r')
    with pytest.raises(ValueError, match=r"^not JSON \([^;]*\)$"):
        read_object(b'{"response": "a"} x\r\n')
    assert read_object(b'{"response": "a\\r"}\r\n') == {"response": "a\r"}


def test_records_mark_training_items_and_replies_the_models_cannot_read(store, tmp_path):
    """As `dialscore score` marks training items and /score warns: a record says `trained` where its last turn
    and reply are one of the model's training items (a leading speaker tag aside), and `warning` where its
    reply is blank, has no word or is not English; the counts add them up."""
    from service.bulk.records import LineChecks
    from service.store.trained_items import TrainedItems, hashes, item_key

    keys = TrainedItems("length", hashes([item_key(GOOD[0]["context"], GOOD[0]["response"])]), {})
    tagged = {**GOOD[0], "context": ["B: " + GOOD[0]["context"][0]], "response": "A: " + GOOD[0]["response"]}
    lines = encoded([GOOD[0], GOOD[1], tagged, {**GOOD[1], "response": "  "}, {**GOOD[1], "response": "🙂🙂"},
                     {**GOOD[1], "response": "Я в порядке, спасибо, а ты?"}])
    source = write_lines(tmp_path / "in.jsonl", lines)
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("length"), handle, tmp_path / "out.jsonl", checks=LineChecks(keys, 0.5))
    records = read_output(tmp_path / "out.jsonl")
    assert [r.get("trained", False) for r in records] == [True, False, True, False, False, False]
    assert [r.get("warning", {}).get("code") for r in records] == [None, None, None, "empty", "no_words", "not_english"]
    assert all("score" in r for r in records) and counts.trained == 2
    assert counts.warnings == {"empty": 1, "no_words": 1, "not_english": 1}
    with open(source, "rb") as handle:  # without checks, records are as they were
        bulk.run(store.get("length"), handle, tmp_path / "plain.jsonl")
    assert not any("trained" in r or "warning" in r for r in read_output(tmp_path / "plain.jsonl"))


def test_a_references_list_in_bulk_says_which_command_reads_it(store):
    from service.bulk.records import BadLine, parse_line

    line = json.dumps({"context": ["hi"], "response": "hello", "references": ["hey", "hi there"]}).encode()
    with pytest.raises(BadLine, match="`dialscore score` reads a `references` list"):
        parse_line(line, store.get("bleu4"))


def test_line_checks_pass_over_a_whole_dialogue_and_count_each_warning(store, tmp_path):
    """A dialogue (mh's items) has no last turn and reply to look up or warn of; a run counts every warned line."""
    from service.bulk.records import LineChecks
    from service.scorers.base import Dialogue, Turn
    from service.store.trained_items import TrainedItems, hashes, item_key

    checks = LineChecks(TrainedItems("mh", hashes([item_key(["hi"], "hello")]), {}), 0.5)
    assert checks.of(Dialogue([Turn("user", "hi"), Turn("bot", "hello")])) == {}
    source = write_lines(tmp_path / "in.jsonl", encoded([{**GOOD[1], "response": reply} for reply in ("", " ", "ok")]))
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("length"), handle, tmp_path / "out.jsonl", checks=LineChecks(None, 0.5))
    assert counts.warnings == {"empty": 2} and counts.scored == 3


def test_records_carry_each_lines_details_where_the_model_gives_them(store, monkeypatch):
    """Details (ruber's `components`) go with their own line's record, in a batch and line by line after
    the batch failed."""
    from service.bulk.records import score_batch
    from service.scorers.base import ScoreBatch

    scorer = store.get("length")
    batch = list(enumerate(encoded(GOOD), start=1))

    def score(items, options, cache):
        return ScoreBatch([float(len(i.response)) for i in items], [{"chars": len(i.response)} for i in items])

    monkeypatch.setattr(scorer, "score", score)
    records = score_batch(batch, scorer, {})
    assert [r["details"] for r in records] == [{"chars": len(item["response"])} for item in GOOD]

    def one_at_a_time(items, options, cache):
        if len(items) > 1:
            raise RuntimeError("a batch failure")
        return score(items, options, cache)

    monkeypatch.setattr(scorer, "score", one_at_a_time)
    assert score_batch(batch, scorer, {}) == records
