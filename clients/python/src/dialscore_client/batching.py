"""Batches split to the server's limits, and the chunks' answers joined into one, in the caller's indices.

Joining relies on the contract's promise that an item's (a candidate's) score does not depend on the rest
of its batch: the joined answer is the one the server would give the whole batch, were it allowed.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dialscore_client.errors import DialscoreError, InvalidRequest, ServerError, TooLarge, reading_answer, rebase_path
from dialscore_client.results import MultiScoreResult, RankedCandidate, Ranking, ReplyWarning, ScoreResult

# Paths of one element's own problems, which `on_invalid: "skip"` skips: an item's field (`items.3.reference`)
# or the item itself (`items.3`: not an object), a candidate.
_ELEMENT_PATH = {"items": re.compile(r"items\.(\d+)(\..+)?"), "candidates": re.compile(r"candidates\.(\d+)")}


@dataclass
class Piece:
    """One chunk of a batch, `[start, stop)` in the caller's indices: the server's answer, or the (re-based)
    error that named every element of the chunk as invalid under `on_invalid: "skip"`."""

    start: int
    stop: int
    answer: dict[str, Any] | None = None
    failure: DialscoreError | None = None


def plan(sizes: Sequence[int], envelope: int, max_count: int | None, max_bytes: int | None) -> list[range]:
    """Consecutive chunks of the elements whose encoded sizes are `sizes`, each within `max_count` elements and
    `max_bytes` of body (`envelope`: the body's size with an empty list; elements are joined by commas). An
    element too large alone gets a chunk of its own, for the server to refuse."""
    chunks: list[range] = []
    start, used = 0, envelope
    for i, size in enumerate(sizes):
        count = i - start
        grown = used + size + (1 if count else 0)
        if count and ((max_count is not None and count >= max_count) or (max_bytes is not None and grown > max_bytes)):
            chunks.append(range(start, i))
            start, count, grown = i, 0, envelope + size
        used = grown
    chunks.append(range(start, len(sizes)))  # an empty batch is sent as it is, for the server to judge
    return chunks


def names_the_batch(error: DialscoreError, field: str) -> bool:
    """A 413 about the batch as a whole (its count, the encoder's word pieces, the body's bytes), which a
    smaller chunk may pass."""
    return isinstance(error, TooLarge) and any(key in (field, "max_body_bytes") for key in error.details)


def names_elements_only(error: DialscoreError, field: str) -> bool:
    """A 413 / 422 from the server whose details name only elements' own problems (`items.3.response`)."""
    return (isinstance(error, (TooLarge, InvalidRequest)) and error.status is not None and bool(error.details)
            and all(_ELEMENT_PATH[field].fullmatch(key) for key in error.details))


def refusal_of_the_whole(refusals: Sequence[DialscoreError],
                         unchecked: tuple[int, DialscoreError] | None = None) -> DialscoreError:
    """The error the server gives the whole batch whose chunks got `refusals` (each naming only elements'
    problems): 413 naming the elements over a limit, which it checks first, else 422 naming every invalid one.
    `unchecked`: the first element not checked, and why (a later chunk's other failure, a timeout)."""
    over = [refusal for refusal in refusals if isinstance(refusal, TooLarge)]
    error = merged(over or refusals)
    if unchecked is not None:
        start, why = unchecked
        error.message = f"{error.message} (Elements from {start} on were not checked: {why})"
        error.args = (error.message,)
    return error


def merged(failures: Sequence[DialscoreError]) -> DialscoreError:
    """One error naming every problem of `failures`: the first 413 among them (else the first), with the
    details of all."""
    lead = next((f for f in failures if isinstance(f, TooLarge)), failures[0])
    details = {key: value for failure in failures for key, value in failure.details.items()}
    return type(lead)(lead.status, lead.code, lead.message, details, attempts=lead.attempts)


def every_element_invalid(error: DialscoreError, field: str, count: int) -> bool:
    """A 413 / 422 whose details name only elements' own problems, every element of the chunk among them:
    the server's answer, under `on_invalid: "skip"`, to a request that leaves nothing to score."""
    if not names_elements_only(error, field):
        return False
    return {int(_ELEMENT_PATH[field].fullmatch(key).group(1)) for key in error.details} == set(range(count))


def join_scores(pieces: Sequence[Piece]) -> ScoreResult | MultiScoreResult:
    """The chunks' /score answers as one (one model's, or several models' joined per model)."""
    with reading_answer("POST /score's answer"):
        return _join_scores(pieces)


def join_rankings(pieces: Sequence[Piece], top_k: int | None, excluded: Sequence[str] = ()) -> Ranking:
    """The chunks' /rerank answers as one ranking: best first, ties in the candidates' order, then `top_k`;
    `excluded`, the warning codes sent as `exclude_warned`, whose candidates no chunk ranks."""
    with reading_answer("POST /rerank's answer"):
        return _join_rankings(pieces, top_k, excluded)


def _join_scores(pieces: Sequence[Piece]) -> ScoreResult | MultiScoreResult:
    first = _first_answer(pieces)
    skipped, errors = _skips(pieces, "items")
    dropped, warnings = _context_dropped(pieces), _warnings(pieces)
    if "results" not in first:
        result = _join_model(pieces, None, skipped, errors)
        result.context_dropped, result.warnings = dropped, warnings
        return result
    _same(pieces)
    results = {name: _join_model(pieces, name, skipped, errors) for name in first["models"]}
    return MultiScoreResult(first["model"], first["version"], list(first["models"]), results, skipped, errors,
                            dropped, warnings)


def _join_rankings(pieces: Sequence[Piece], top_k: int | None, excluded: Sequence[str]) -> Ranking:
    first = _first_answer(pieces)
    version = _same(pieces)
    for piece in pieces:
        _check_ranking(piece, top_k, excluded)
    ranking = [RankedCandidate(entry["index"] + piece.start, entry["response"], entry["score"],
                               entry.get("human_percentile"), entry.get("details"))
               for piece in pieces if piece.answer is not None for entry in piece.answer["ranking"]]
    if len(pieces) > 1:  # one chunk's ranking is the server's, as it is
        ranking.sort(key=lambda entry: (-entry.score, entry.index))
        ranking = ranking[:top_k] if top_k is not None else ranking
    skipped, errors = _skips(pieces, "candidates")
    return Ranking(first["model"], version, ranking, skipped, errors, first.get("context_dropped"), _warnings(pieces))


def _check_ranking(piece: Piece, top_k: int | None, excluded: Sequence[str]) -> None:
    """A chunk's ranking names each of its candidates not skipped nor warned with an `excluded` code once (the
    best `top_k` of them), else ServerError `bad_answer`."""
    if piece.answer is None:
        return
    count = piece.stop - piece.start
    skipped = set(piece.answer.get("skipped", [])) | {
        w["index"] for w in piece.answer.get("warnings", []) if w["code"] in excluded}
    ranked = [entry["index"] for entry in piece.answer["ranking"]]
    expected = count - len(skipped) if top_k is None else min(top_k, count - len(skipped))
    if len(ranked) != expected or len(set(ranked)) != expected or not set(ranked) <= set(range(count)) - skipped:
        raise ServerError(200, "bad_answer", f"The server ranked {len(ranked)} candidates of {count} "
                          f"({len(skipped)} skipped or excluded; candidates {piece.start} to {piece.stop - 1}).")


def _first_answer(pieces: Sequence[Piece]) -> dict[str, Any]:
    """The first chunk's answer; when no chunk was answered (every element invalid), the error the server
    gives such a whole batch: 413 if one element was over a limit, else 422, naming every problem."""
    for piece in pieces:
        if piece.answer is not None:
            return piece.answer
    raise merged([piece.failure for piece in pieces if piece.failure is not None])


def _join_model(pieces: Sequence[Piece], name: str | None, skipped: list[int], errors: dict[str, str]) -> ScoreResult:
    """One model's scores, details and human percentiles across the chunks (`name`'s of a several-models
    answer); a chunk with nothing scored gives None for each of its items."""
    answers = [None if piece.answer is None else piece.answer if name is None else piece.answer["results"][name]
               for piece in pieces]
    for piece, answer in zip(pieces, answers):
        if answer is not None and len(answer["scores"]) != piece.stop - piece.start:
            raise ServerError(200, "bad_answer", f"The server answered {len(answer['scores'])} scores for "
                                 f"{piece.stop - piece.start} items (items {piece.start} to {piece.stop - 1}).")
    versions = list(dict.fromkeys(answer["version"] for answer in answers if answer is not None))
    model = next(answer["model"] for answer in answers if answer is not None)
    return ScoreResult(model, _one(versions), _per_item(pieces, answers, "scores") or [],
                       _per_item(pieces, answers, "details"), list(skipped), dict(errors),
                       human_percentile=_per_item(pieces, answers, "human_percentile"),
                       trained=[i + piece.start for piece, answer in zip(pieces, answers) if answer is not None
                                for i in answer.get("trained", [])])


def _per_item(pieces: Sequence[Piece], answers: Sequence[dict[str, Any] | None], key: str) -> list[Any] | None:
    """The chunks' lists under `key` (parallel to their items) joined in the caller's order, None for the items
    of a chunk without one; None when no chunk's answer has it."""
    if not any(answer is not None and answer.get(key) is not None for answer in answers):
        return None
    joined: list[Any] = []
    for piece, answer in zip(pieces, answers):
        joined += (answer or {}).get(key) or [None] * (piece.stop - piece.start)
    return joined


def _context_dropped(pieces: Sequence[Piece]) -> list[int] | None:
    """Per item, the context turns the server dropped (on_long_context="keep_last"); 0 for a chunk not answered."""
    if not any(piece.answer is not None and "context_dropped" in piece.answer for piece in pieces):
        return None
    dropped: list[int] = []
    for piece in pieces:
        answered = (piece.answer or {}).get("context_dropped")
        dropped += answered if answered is not None else [0] * (piece.stop - piece.start)
    return dropped


def _warnings(pieces: Sequence[Piece]) -> list[ReplyWarning]:
    """The chunks' warnings, their indices in the caller's batch."""
    return [ReplyWarning(index=w["index"] + piece.start, code=w["code"], message=w["message"])
            for piece in pieces if piece.answer is not None for w in piece.answer.get("warnings", [])]


def _skips(pieces: Sequence[Piece], field: str) -> tuple[list[int], dict[str, str]]:
    skipped: list[int] = []
    errors: dict[str, str] = {}
    for piece in pieces:
        if piece.answer is not None:
            skipped += [i + piece.start for i in piece.answer.get("skipped", [])]
            errors.update({rebase_path(key, field, piece.start): value
                           for key, value in piece.answer.get("errors", {}).items()})
        elif piece.failure is not None:
            skipped += range(piece.start, piece.stop)
            errors.update(piece.failure.details)
    return skipped, errors


def _same(pieces: Sequence[Piece]) -> str:
    """The `version` every answered chunk names."""
    return _one(list(dict.fromkeys(piece.answer["version"] for piece in pieces if piece.answer is not None)))


def _one(versions: list[str]) -> str:
    """The one version of the chunks' answers; chunks scored by two versions (a deployment rolling out between
    them) cannot be joined."""
    if len(versions) > 1:
        raise DialscoreError(None, "version_changed", f"The batch's chunks were scored by different versions "
                             f"({', '.join(versions)}), as a new deployment rolled out; send the batch again.",
                             {"versions": versions})
    return versions[0]
