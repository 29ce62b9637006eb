"""`Client`: the service's endpoints as methods, batches split to the limits the server publishes."""
from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, overload

import requests

from dialscore_client import batching
from dialscore_client.errors import DialscoreError, InvalidRequest, ServerError, reading_answer
from dialscore_client.results import (CorrelationReport, HumanEvalReport, Method, ModelInfo, MultiScoreResult,
                                      OnInvalid, OnLongContext, Ranking, Rating, ScoreResult, ServedModels)
from dialscore_client.transport import Transport, encode_checked
from dialscore_client.version import __version__

# The limits that splitting reads from GET /models' `limits` (a limit the server does not publish is
# taken as none).
COUNT_LIMIT = {"items": "max_items", "candidates": "max_candidates"}
BODY_LIMIT = "max_body_bytes"
# Seconds a method call may take by default: a bot's call fails within it when the server is down or slow,
# instead of retrying for retry_deadline. A large batch (split into many chunks) needs a larger one.
DEFAULT_TIMEOUT = 10.0
# The fields and types every /correlate and /human-eval answer has (the service's response schemas).
_NONE = type(None)
CORRELATE_FIELDS = {"dialscore": str, "n": int, "metrics": dict, "comparisons": list, "agreement": (dict, _NONE)}
HUMAN_EVAL_FIELDS = {"dialscore": str, "raters": dict, "systems": list, "intervals": dict, "significance": dict,
                     "criteria": list, "reversed": list, "qc_criteria": list, "kept_ratings": int,
                     "quality_control": (dict, _NONE)}


class Client:
    """A client of one dialscore server (or a load balancer in front of several).

    base_url: the server's root, e.g. "http://127.0.0.1:8000". token: sent as `Authorization: Bearer <token>`.
    timeout: seconds one method call may take in all (attempts, waits, every chunk of a split batch); each
    attempt sends what is left as `X-Request-Timeout`. DEFAULT_TIMEOUT unless given; None: no header, the
    server's default budget, and up to 60 s of waiting for a connection or between an answer's bytes, retries
    bounded by retry_deadline alone. retry_deadline: seconds after a
    request's first attempt within which refused connections, 502 and 503s that waiting may cure are
    retried, after `Retry-After` or with backoff; 0 turns retries off. session: your own `requests.Session`.
    A base URL that is not http(s) with a host, a token that is not printable ASCII (surrounding whitespace,
    such as a secret file's newline, is stripped), or a timeout or retry_deadline that is not a finite
    number of seconds (transport.checked_seconds), raises ValueError or TypeError here.
    """

    def __init__(self, base_url: str, token: str | None = None, timeout: float | None = DEFAULT_TIMEOUT,
                 retry_deadline: float = 60.0, session: requests.Session | None = None) -> None:
        self._transport = Transport(base_url, token, timeout, retry_deadline, session,
                                    user_agent=f"dialscore-client/{__version__}")
        self._limits: dict[str, int] | None = None
        self._limits_lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """The server's root URL, without a trailing slash."""
        return self._transport.base_url

    def close(self) -> None:
        """Close the connections (of a session the client made itself)."""
        self._transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- discovery ---------------------------------------------------------------------------------
    def models(self) -> ServedModels:
        """GET /models: the served models, the server's limits, and whether it is still loading."""
        return self._models(self._transport.deadline())

    def _models(self, deadline: float | None) -> ServedModels:
        answer = self._transport.get("/models", deadline)
        with reading_answer("GET /models' answer"):
            served = _served(answer)
        with self._limits_lock:
            self._limits = served.limits
        return served

    def limits(self, refresh: bool = False) -> dict[str, int]:
        """The server's limits (GET /models `limits`), fetched once and kept; `refresh` fetches them again."""
        return self._limits_by(self._transport.deadline(), refresh)

    def _limits_by(self, deadline: float | None, refresh: bool = False) -> dict[str, int]:
        with self._limits_lock:
            cached = None if refresh else self._limits
        return dict(cached if cached is not None else self._models(deadline).limits)

    # --- scoring -----------------------------------------------------------------------------------
    @overload
    def score(self, model: str, items: Sequence[Mapping[str, Any]], options: Mapping[str, Any] | None = None,
              on_invalid: OnInvalid | None = None, on_long_context: OnLongContext | None = "keep_last"
              ) -> ScoreResult: ...

    @overload
    def score(self, model: list[str] | tuple[str, ...], items: Sequence[Mapping[str, Any]],
              options: Mapping[str, Any] | None = None, on_invalid: OnInvalid | None = None,
              on_long_context: OnLongContext | None = "keep_last") -> MultiScoreResult: ...

    def score(self, model: str | list[str] | tuple[str, ...], items: Sequence[Mapping[str, Any]],
              options: Mapping[str, Any] | None = None, on_invalid: OnInvalid | None = None,
              on_long_context: OnLongContext | None = "keep_last") -> ScoreResult | MultiScoreResult:
        """POST /score: `items` (dicts of context, response, reference; or turns for dialogue models) scored by
        one model, or by several (a list of names) joined per model; any number of items, sent in chunks
        within the server's limits. on_invalid="skip" scores the valid items and names the rest.
        on_long_context="keep_last" (the default) cuts each context to the turns the models read instead of
        the server refusing a long one (`context_dropped` says how many went); None or "reject": refused."""
        payload: dict[str, Any] = {"models": list(model)} if not isinstance(model, str) else {"model": model}
        payload.update(_given(options=_dict(options), on_invalid=on_invalid, on_long_context=on_long_context))
        pieces = self._send_split("/score", payload, "items", _elements("items", items), on_invalid == "skip")
        return batching.join_scores(pieces)

    def rerank(self, model: str, context: Sequence[str], candidates: Sequence[str], reference: str | None = None,
               top_k: int | None = None, options: Mapping[str, Any] | None = None,
               on_invalid: OnInvalid | None = None, on_long_context: OnLongContext | None = "keep_last",
               exclude_warned: Sequence[str] | None = None) -> Ranking:
        """POST /rerank: `candidates` replies to `context` ranked best first (ties in their order), at most
        `top_k`; more candidates than the server takes at once are scored in chunks and their rankings merged.
        on_long_context as for `score`: a long context is cut to the turns the model reads by default.
        exclude_warned: warning codes ("empty", "no_words", "not_english") whose candidates are left out of
        the ranking before `top_k`; they stay in `warnings`."""
        payload: dict[str, Any] = {"model": model, "context": _elements("context", context)}
        excluded = None if exclude_warned is None else _elements("exclude_warned", exclude_warned)
        payload.update(_given(reference=reference, top_k=top_k, options=_dict(options), on_invalid=on_invalid,
                              on_long_context=on_long_context, exclude_warned=excluded))
        pieces = self._send_split("/rerank", payload, "candidates", _elements("candidates", candidates),
                                  on_invalid == "skip")
        return batching.join_rankings(pieces, top_k, excluded or ())

    # --- analysis ----------------------------------------------------------------------------------
    def correlate(self, human: Sequence[float] | Sequence[Sequence[float]], scores: Mapping[str, Sequence[float]],
                  systems: Sequence[str] | None = None, methods: Sequence[Method] | None = None,
                  confidence: float | None = None, resamples: int | None = None,
                  seed: int | None = None, system_resampling: str | None = None,
                  inputs: Sequence[str] | None = None, item_resampling: str | None = None) -> CorrelationReport:
        """POST /correlate: each metric's correlation with the human scores (per item, and per system with
        `systems`), with bootstrap intervals and tests of the differences between metrics.
        `system_resampling`: what the system level resamples, 'systems', 'items' or 'both' (the server's
        default); `inputs`, each item's input where systems share them, makes it resample whole inputs;
        `item_resampling`: what the item level resamples, 'items' (the server's default) or 'inputs'
        (needs `inputs`); the report's `resampling` names what each level did."""
        payload = {"human": [list(h) if isinstance(h, Sequence) else h for h in human],
                   "scores": {name: list(values) for name, values in scores.items()},
                   **_given(systems=_list(systems), methods=_list(methods), confidence=confidence,
                            resamples=resamples, seed=seed, system_resampling=system_resampling,
                            inputs=_list(inputs), item_resampling=item_resampling)}
        report: CorrelationReport = _checked(self._transport.post("/correlate", payload, self._transport.deadline()),
                                             CORRELATE_FIELDS, "POST /correlate's answer")
        return report

    def human_eval(self, ratings: Sequence[Rating | Mapping[str, Any]], reverse: Sequence[str] | None = None,
                   scale: tuple[float, float] | Sequence[float] | None = None, qc_system: str | None = None,
                   alpha: float | None = None, qc_criteria: Sequence[str] | None = None) -> HumanEvalReport:
        """POST /human-eval: raters checked against the quality-control system, systems ranked by z-score,
        and pairwise significance (Ji et al. 2022)."""
        payload = {"ratings": [dict(rating) for rating in ratings],
                   **_given(reverse=_list(reverse), scale=_list(scale), qc_system=qc_system, alpha=alpha,
                            qc_criteria=_list(qc_criteria))}
        report: HumanEvalReport = _checked(self._transport.post("/human-eval", payload, self._transport.deadline()),
                                           HUMAN_EVAL_FIELDS, "POST /human-eval's answer")
        return report

    # --- splitting ---------------------------------------------------------------------------------
    def _send_split(self, path: str, payload: dict[str, Any], field: str, elements: list[Any],
                    skip: bool) -> list[batching.Piece]:
        """The chunks' answers, in order; the limits' look-up and every chunk share one deadline (`timeout`).
        A chunk refused for its elements' problems fails the batch, but the chunks after it are still sent, so
        that the error names every invalid element, as the server's answer to the whole batch would."""
        deadline = self._transport.deadline()
        envelope = len(encode_checked({**payload, field: []}))  # measured first: nothing unsendable is sent
        sizes = [len(encode_checked(element, f"{field}.{i}")) for i, element in enumerate(elements)]
        limits = self._limits_by(deadline)
        chunks = batching.plan(sizes, envelope, limits.get(COUNT_LIMIT[field]), limits.get(BODY_LIMIT))
        pieces: list[batching.Piece] = []
        refusals: list[DialscoreError] = []
        for chunk in chunks:
            try:
                pieces += self._send_chunk(path, payload, field, elements, chunk.start, chunk.stop, skip, deadline)
            except DialscoreError as error:
                if not batching.names_elements_only(error, field):
                    if refusals:
                        raise batching.refusal_of_the_whole(refusals, unchecked=(chunk.start, error)) from error
                    raise
                refusals.append(error)
        if refusals:
            raise batching.refusal_of_the_whole(refusals)
        return pieces

    def _send_chunk(self, path: str, payload: dict[str, Any], field: str, elements: list[Any], start: int,
                    stop: int, skip: bool, deadline: float | None) -> list[batching.Piece]:
        """One chunk's answer; a chunk over a batch-wide limit the client cannot measure (the encoder's word
        pieces; limits lowered since they were read) is halved and sent again."""
        try:
            answer = self._transport.post(path, {**payload, field: elements[start:stop]}, deadline)
            return [batching.Piece(start, stop, answer=answer)]
        except DialscoreError as error:
            if stop - start > 1 and batching.names_the_batch(error, field):
                middle = (start + stop) // 2
                return (self._send_chunk(path, payload, field, elements, start, middle, skip, deadline)
                        + self._send_chunk(path, payload, field, elements, middle, stop, skip, deadline))
            rebased = error.rebased(field, start)
            if skip and batching.every_element_invalid(error, field, stop - start):
                return [batching.Piece(start, stop, failure=rebased)]
            if rebased is error:
                raise
            raise rebased from error


def _served(answer: Any) -> ServedModels:
    """GET /models' answer as ServedModels."""
    return ServedModels(
        models=[ModelInfo(name=m["name"], version=m["version"], kind=m["kind"], requires=list(m["requires"]),
                          score_range=(m["score_range"][0], m["score_range"][1]), sha256=m["sha256"],
                          providers=list(m["providers"]), card=m.get("card", {}), options=m.get("options", {}),
                          license=m.get("license", ""), commercial_use=m.get("commercial_use") is True,
                          bit_exact_across_batches=m.get("bit_exact_across_batches"), batch_bound=m.get("batch_bound"),
                          uses=list(m.get("uses", [])), components=[dict(c) for c in m.get("components", [])],
                          trained_items=m.get("trained_items"))
                for m in answer["models"]],
        limits=_whole_numbers(answer["limits"]), loading=bool(answer.get("loading", False)),
        failed=dict(answer.get("failed", {})), not_built=dict(answer.get("not_built", {})))


def _whole_numbers(limits: Mapping[str, Any]) -> dict[str, int]:
    """The limits as published, each a whole number; TypeError (read as `bad_answer`) for another value."""
    wrong = {name: value for name, value in limits.items() if isinstance(value, bool) or not isinstance(value, int)}
    if wrong:
        raise TypeError(f"limits that are not whole numbers: {wrong}")
    return dict(limits)


def _checked(answer: Any, fields: Mapping[str, type | tuple[type, ...]], what: str) -> Any:
    """`answer` if it is an object with each of `fields` of its type; else ServerError `bad_answer`."""
    wrong = (["(not an object)"] if not isinstance(answer, dict) else
             [name for name, kind in fields.items() if name not in answer or not isinstance(answer[name], kind)
              or isinstance(answer[name], bool)])
    if wrong:
        raise ServerError(200, "bad_answer", f"{what} is JSON but not the service's answer: missing or wrong "
                          f"{', '.join(wrong)}.")
    return answer


def _given(**fields: Any) -> dict[str, Any]:
    """The fields that were given: the server applies its own defaults to the others."""
    return {name: value for name, value in fields.items() if value is not None}


def _elements(field: str, values: Any) -> list[Any]:
    """`values` as a list, or InvalidRequest (nothing sent) for a string, whose characters would each be a turn,
    a candidate or an item, for a mapping (its keys), or for a value that is not iterable."""
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__iter__"):
        kind = "a string" if isinstance(values, (str, bytes)) else type(values).__name__
        raise InvalidRequest(None, "invalid_request", f"`{field}` must be a list, not {kind}.",
                             {field: "Not a valid list."})
    return list(values)


def _list(values: Sequence[Any] | None) -> list[Any] | None:
    return None if values is None else list(values)


def _dict(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if values is None else dict(values)
