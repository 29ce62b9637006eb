"""The OpenAPI 3 document, generated from the marshmallow schemas that validate requests."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin

from service.config import MAX_READ_TIMEOUT
from service.api import middleware, openapi_v2, schemas
from service.stats.correlation import METHODS

VERSION = "1.0.0"
MAX_REQUEST_TIMEOUT_S = int(MAX_READ_TIMEOUT)  # the largest X-Request-Timeout the server takes (server/front.py)

_ERRORS = {
    "400": ("`bad_json`: the body is empty, not UTF-8, not JSON, not a JSON object, repeats a key within one "
            "object, or holds a lone UTF-16 surrogate or `NaN`, `Infinity` or `-Infinity`, which are not JSON "
            "(`details` names where; a number too large for a double is JSON, and a 422). `bad_request`: the HTTP request "
            "itself is malformed, answered by the server before the app reads it, or its `X-Request-Timeout` is not "
            f"a positive number of seconds up to {MAX_REQUEST_TIMEOUT_S}, or it asks to upgrade to WebSocket."),
    "401": "A token is configured and missing or wrong (`unauthorized`).",
    "404": "Unknown model (`unknown_model`).",
    "408": ("The request did not arrive whole within the server's read timeout (`request_timeout`, "
            "DIALSCORE_READ_TIMEOUT); the connection is closed."),
    "413": ("Over a configured limit (`too_large`): body bytes, items, candidates, turns, characters, word "
            "pieces through the sentence encoder, JSON nesting, and the /correlate and /human-eval sizes "
            "(ratings, systems, criteria); GET /models lists the limits."),
    "414": "The request line is over `max_request_line` bytes (`too_large`); GET /models lists the limits.",
    "431": "Over `max_headers` header fields, `max_header_bytes` in one or `max_head_bytes` in all (`too_large`); "
           "GET /models lists the limits.",
    "422": "Schema violation (`invalid_request`); details map field paths to messages.",
    "405": "The path exists but not for this method; the `Allow` header lists the right ones.",
    "500": "A bug in the service (`internal`); never the answer to bad input.",
    "503": ("Models are not loaded yet, or the one asked for failed to load on this server (`not_ready`). "
            "While they load, `Retry-After` says when to try again; a model that failed to load will not load by "
            "waiting, and that answer carries no `Retry-After`."),
}
# The 503s of an operation that computes: refused before the work started (admission control, deadlines,
# shutdown) or a model not loaded; /readyz answers only `not_ready`.
_REFUSED = (
    "Refused before any work was done; `code` says why and what to do. `overloaded`: past the server's admission "
    "bound, or the request cannot start and finish within its budget; retry after `Retry-After`. "
    "`deadline_exceeded`: the budget ran out while the request waited; it was not computed; retry only with "
    "budget left. `shutting_down`: this pod is stopping; retry after `Retry-After` (another pod answers). "
    "`not_ready`: models still loading (with `Retry-After`), or the model failed to load on this server "
    "(without: waiting will not help; do not retry).")
_REQUEST_TIMEOUT = {
    "description": (f"The request's time budget in seconds (a positive decimal, at most {MAX_REQUEST_TIMEOUT_S}); "
                    "without it, the server's DIALSCORE_REQUEST_TIMEOUT (default 30). Work that cannot start and "
                    "finish within it is refused with 503 `overloaded`, and work whose budget ran out before it "
                    "started is never computed (503 `deadline_exceeded`). A bad value is a 400 `bad_request`."),
    "required": False,
    # A string of decimal digits: a header is text, and `1e3` or `+2`, numbers to a JSON reader, are refused.
    "schema": {"type": "string", "pattern": r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)$"},
    "example": "1",
}
# Any operation can answer these; 400 (malformed HTTP), 408, 414 and 431 come from the server itself
# (service/server/), before the app reads the request.
_ALWAYS = ("400", "405", "408", "414", "431", "500")

_SCORE_EXAMPLE = {
    "model": "adem",
    "items": [{"context": ["hey, what do you want to do tonight?", "why don't we go see a movie?"],
               "response": "nah, let's do something active.",
               "reference": "yeah, the film about turing looks great!"}],
    "options": {},
}
_CORRELATE_EXAMPLE = {
    "human": [3.0, 4.5, 1.0, 2.0, 3.5, 4.0, 1.5, 2.5, 5.0, 3.0],
    "scores": {"adem": [2.9, 4.0, 1.7, 2.2, 3.1, 3.6, 2.0, 2.4, 4.4, 3.3],
               "bleu4": [0.1, 0.0, 0.2, 0.1, 0.05, 0.3, 0.0, 0.1, 0.2, 0.1]},
    "systems": ["hred", "human", "tfidf", "hred", "human", "human", "tfidf", "hred", "human", "tfidf"], "methods": ["pearson", "spearman", "kendall"],
    "confidence": 0.95, "resamples": 1000, "seed": 0,
}
# docs/examples/human-eval.json (README sends it), copied because the image ships service/ and not
# docs/; tests/api/test_health.py keeps the two equal. Three raters who pass quality control, so
# the example gives a ranking and significance, not an empty result.
_HUMAN_EVAL_EXAMPLE = {
    "ratings": [
        {"rater": "w1", "system": "A", "item": "w1-d0", "scores": {"interesting": 75, "fun": 70, "robotic": 25}},
        {"rater": "w1", "system": "A", "item": "w1-d1", "scores": {"interesting": 70, "fun": 65, "robotic": 30}},
        {"rater": "w1", "system": "B", "item": "w1-d2", "scores": {"interesting": 55, "fun": 50, "robotic": 45}},
        {"rater": "w1", "system": "B", "item": "w1-d3", "scores": {"interesting": 50, "fun": 45, "robotic": 50}},
        {"rater": "w1", "system": "degraded", "item": "w1-d4", "scores": {"interesting": 15, "fun": 10, "robotic": 85}},
        {"rater": "w1", "system": "degraded", "item": "w1-d5", "scores": {"interesting": 10, "fun": 5, "robotic": 90}},
        {"rater": "w2", "system": "A", "item": "w2-d0", "scores": {"interesting": 83, "fun": 78, "robotic": 17}},
        {"rater": "w2", "system": "A", "item": "w2-d1", "scores": {"interesting": 78, "fun": 73, "robotic": 22}},
        {"rater": "w2", "system": "B", "item": "w2-d2", "scores": {"interesting": 63, "fun": 58, "robotic": 37}},
        {"rater": "w2", "system": "B", "item": "w2-d3", "scores": {"interesting": 58, "fun": 53, "robotic": 42}},
        {"rater": "w2", "system": "degraded", "item": "w2-d4", "scores": {"interesting": 23, "fun": 18, "robotic": 77}},
        {"rater": "w2", "system": "degraded", "item": "w2-d5", "scores": {"interesting": 18, "fun": 13, "robotic": 82}},
        {"rater": "w3", "system": "A", "item": "w3-d0", "scores": {"interesting": 70, "fun": 65, "robotic": 30}},
        {"rater": "w3", "system": "A", "item": "w3-d1", "scores": {"interesting": 65, "fun": 60, "robotic": 35}},
        {"rater": "w3", "system": "B", "item": "w3-d2", "scores": {"interesting": 50, "fun": 45, "robotic": 50}},
        {"rater": "w3", "system": "B", "item": "w3-d3", "scores": {"interesting": 45, "fun": 40, "robotic": 55}},
        {"rater": "w3", "system": "degraded", "item": "w3-d4", "scores": {"interesting": 10, "fun": 5, "robotic": 90}},
        {"rater": "w3", "system": "degraded", "item": "w3-d5", "scores": {"interesting": 5, "fun": 0, "robotic": 95}},
    ],
    "reverse": ["robotic"], "scale": [0, 100], "qc_system": "degraded", "alpha": 0.05,
}


def _error(code: str, schema: str = "Error") -> dict[str, Any]:
    """The answer for an error status, in the contract's `Error` form or the v2 paths' `V2Error`."""
    response: dict[str, Any] = {"description": _ERRORS[code],
                                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}}
    if code == "401":
        response["headers"] = {"WWW-Authenticate": {"description": 'The scheme: `Bearer realm="dialscore"`.',
                                                    "schema": {"type": "string"}}}
    if code == "405":
        response["headers"] = {"Allow": {"description": "The methods this path answers, e.g. `POST, OPTIONS`.",
                                         "schema": {"type": "string"}}}
    if code == "503":
        response["headers"] = {"Retry-After": {
            "description": "Seconds to wait before retrying, while the models load; absent when a model failed "
                           "to load.",
            "schema": {"type": "integer", "minimum": 1}}}
    return response


def _refused(schema: str = "Error") -> dict[str, Any]:
    """The 503 of a scoring or analysis operation: every refusal code, and when its Retry-After is sent."""
    response = _error("503", schema)
    response["description"] = _REFUSED
    response["headers"]["Retry-After"]["description"] = (
        "Whole seconds to wait before sending the request again: with `overloaded`, `deadline_exceeded`, "
        "`shutting_down`, and `not_ready` while models load; absent when a model failed to load.")
    return response


def _responses(ok: dict[str, Any], codes: tuple[str, ...], schema: str = "Error") -> dict[str, Any]:
    return {"200": ok, **{code: _error(code, schema) for code in sorted(set(codes + _ALWAYS))}}


def _v2_responses(ok: dict[str, Any], codes: tuple[str, ...]) -> dict[str, Any]:
    return _responses(ok, codes, "V2Error")


def _post(operation_id: str, summary: str, request_schema: str, example: dict[str, Any], ok: dict[str, Any],
          codes: tuple[str, ...]) -> dict[str, Any]:
    """A computing operation: it takes X-Request-Timeout and may be refused with 503."""
    responses = {**_responses(ok, codes + ("503",)), "503": _refused()}
    return {"post": {"operationId": operation_id, "summary": summary,
                     "parameters": ["RequestTimeout"],  # apispec: a component by name
                     "requestBody": {"required": True, "content": {"application/json": {
                         "schema": {"$ref": f"#/components/schemas/{request_schema}"}, "example": example}}},
                     "responses": responses}}


def _get(operation_id: str, summary: str, content: dict[str, Any], codes: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"get": {"operationId": operation_id, "summary": summary,
                    "responses": _responses({"description": summary, "content": content}, codes)}}


def _guarded(path: str, operations: dict[str, Any]) -> dict[str, Any]:
    """Security and the 401 as service/api/middleware.py applies them: with a token configured every
    path but the probes needs it. `{}` beside the bearer scheme: without one, nothing is needed."""
    for operation in operations.values():
        if path in middleware.OPEN_PATHS:
            operation["security"] = []
            continue
        operation["security"] = [{"bearer": []}, {}]
        responses = {**operation["responses"], "401": _error("401", _error_schema(path))}
        operation["responses"] = {code: responses[code] for code in sorted(responses)}
    return operations


def _error_schema(path: str) -> str:
    """The form errors take on `path` (service/errors.py, error_body)."""
    return "V2Error" if path == openapi_v2.PREFIX or path.startswith(openapi_v2.PREFIX + "/") else "Error"


_ANY_JSON = {"application/json": {"schema": {"type": "object"}}}


def _json_of(ref: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}


def _tighten(node: Any) -> None:
    """What apispec's marshmallow plugin leaves loose: a Length validator on a Dict becomes
    `minLength` (a string keyword, ignored on objects) instead of `minProperties`, and Range's
    min_inclusive/max_inclusive=False are dropped, so an open interval reads as a closed one."""
    if isinstance(node, dict):
        if node.get("type") == "object" and "minLength" in node:
            node["minProperties"] = node.pop("minLength")
        for value in node.values():
            _tighten(value)
    elif isinstance(node, list):
        for value in node:
            _tighten(value)


@lru_cache(maxsize=1)
def openapi_document() -> dict[str, Any]:
    spec = APISpec(title="dialscore", version=VERSION, openapi_version="3.0.3",
                   plugins=[MarshmallowPlugin()],
                   info={"description": "Scores open-domain dialogue replies and conversations; correlates "
                                        "metrics with human judgements. Contract: API.md v1."})
    for name, schema in [("Item", schemas.ItemSchema), ("Turn", schemas.TurnSchema),
                         ("Dialogue", schemas.DialogueSchema), ("ScoreRequest", schemas.ScoreRequestSchema),
                         ("ScoreResponse", schemas.ScoreResponseSchema), ("RerankRequest", schemas.RerankRequestSchema),
                         ("RerankResponse", schemas.RerankResponseSchema),
                         ("MultiScoreResponse", schemas.MultiScoreResponseSchema),
                         ("CorrelateRequest", schemas.CorrelateRequestSchema),
                         ("CorrelateResponse", schemas.CorrelateResponseSchema),
                         ("HumanEvalRequest", schemas.HumanEvalRequestSchema),
                         ("HumanEvalResponse", schemas.HumanEvalResponseSchema),
                         ("Status", schemas.StatusSchema), ("ModelsResponse", schemas.ModelsResponseSchema),
                         ("Error", schemas.ErrorSchema)]:
        spec.components.schema(name, schema=schema)
    for name, component in openapi_v2.component_schemas().items():
        spec.components.schema(name, component=component)
    for schema_name, prop in (("CorrelateRequest", "confidence"), ("HumanEvalRequest", "alpha")):
        spec.components.schemas[schema_name]["properties"][prop].update(exclusiveMinimum=True, exclusiveMaximum=True)
    # `items` holds Item or Dialogue objects depending on the model's kind: say so exactly.
    spec.components.schemas["ScoreRequest"]["properties"]["items"]["items"] = {
        "oneOf": [{"$ref": "#/components/schemas/Item"}, {"$ref": "#/components/schemas/Dialogue"}]}
    human_score = {"type": "number", "minimum": -schemas.MAX_MAGNITUDE, "maximum": schemas.MAX_MAGNITUDE}
    spec.components.schemas["CorrelateRequest"]["properties"]["human"] = {
        "type": "array", "minItems": 3,
        "description": "Human scores, or several ratings per item (averaged); at least 3 items, and every list "
                       "in `scores` (and `systems`) as long as this one.",
        "items": {"oneOf": [human_score, {"type": "array", "minItems": 1, "items": human_score}]}}
    _document_rules(spec.components.schemas)
    spec.components.security_scheme("bearer", {"type": "http", "scheme": "bearer"})
    spec.components.parameter("RequestTimeout", "header", {"name": "X-Request-Timeout", **_REQUEST_TIMEOUT})
    for path, operations in _operations().items():
        spec.path(path, operations=_guarded(path, operations))
    document = spec.to_dict()
    _tighten(document)
    return document


def _document_rules(components: dict[str, Any]) -> None:
    """What the schemas check in code (validates_schema) or default by a callable, which apispec
    cannot see: written here so that a request the document calls valid is one the service takes."""
    score = components["ScoreRequest"]
    score["oneOf"] = [{"required": ["model"]}, {"required": ["models"]}]  # exactly one of the two
    for name in ("ScoreRequest", "RerankRequest"):
        components[name]["properties"]["options"]["default"] = {}
    components["CorrelateRequest"]["properties"]["methods"]["default"] = list(METHODS)
    human_eval = components["HumanEvalRequest"]["properties"]
    human_eval["reverse"]["default"] = []
    human_eval["scale"]["default"] = [0.0, 100.0]
    human_eval["scale"]["description"] = ("[low, high], low below high; every score must lie within it. "
                                          "Default [0, 100].")
    human_eval["ratings"]["description"] = (
        "One row per rater, system and item; every row scores the same criteria. With `qc_system`, the rows of "
        "that system are the quality-control dialogues; where none are, every rater fails quality control and "
        "the response's `warnings` says so.")
    human_eval["qc_criteria"]["description"] += " Each must be a criterion of the ratings; not empty."
    components["Dialogue"]["properties"]["turns"]["description"] = (
        "The whole conversation, oldest first (1..max_dialogue_turns), with at least one turn by the bot "
        "(`speaker: bot`) whose text is not blank; turns with blank text are dropped before scoring.")
    components["ErrorBody"]["properties"]["code"]["description"] = (
        "bad_json, bad_request (400); unauthorized (401); unknown_model, not_found (404); method_not_allowed "
        "(405); request_timeout (408); too_large (413, 414, 431); invalid_request (422); internal (500); not_ready, "
        "overloaded, deadline_exceeded, shutting_down (503).")


def _operations() -> dict[str, dict[str, Any]]:
    """Every path's operations, before security (see _guarded)."""
    codes = ("400", "404", "413", "422", "503")
    return {
        "/healthz": _get("healthz", "Liveness: the process serves.", _json_of("Status")),
        "/readyz": _get("readyz", "Readiness: every configured model loaded and warmed up.", _json_of("Status"),
                        ("503",)),
        "/models": _get("listModels", "Served models with versions, providers and cards; limits.",
                        _json_of("ModelsResponse")),
        "/metrics": _get("metrics", "Prometheus metrics of all workers.",
                         {"text/plain": {"schema": {"type": "string"}}}),
        "/openapi.json": _get("openapi", "This document.", _ANY_JSON),
        "/score": _post("score", "Score replies (or dialogues) with one model.", "ScoreRequest", _SCORE_EXAMPLE,
                        {"description": "Scores in item order (with `models`: one such response per model).",
                         "content": {"application/json": {"schema": {"oneOf": [
                             {"$ref": "#/components/schemas/ScoreResponse"},
                             {"$ref": "#/components/schemas/MultiScoreResponse"}]}}}}, codes),
        "/rerank": _post("rerank", "Rank candidate replies, best first.", "RerankRequest",
                         {"model": "autojudge", "context": ["hi! how was your weekend?"],
                          "candidates": ["i don't know.", "great, i went hiking!"], "top_k": 1},
                         {"description": "Ranking, best first; ties keep input order.",
                          "content": _json_of("RerankResponse")}, codes),
        "/correlate": _post(
            "correlate", "Correlation of metric scores with human judgements: Pearson, Spearman, Kendall's tau-b "
            "with p-values, bootstrap intervals, item and system level, pairwise comparisons of metrics.",
            "CorrelateRequest",
            _CORRELATE_EXAMPLE, {"description": "Per metric, level and method: r, p, ci, n (null with a reason when "
                                                 "undefined); comparisons.", "content": _json_of("CorrelateResponse")},
            ("400", "413", "422")),
        "/human-eval": _post(
            "humanEval", "Reliable human assessment (Ji et al. 2022): z-scores, rater quality control, system "
            "ranking, pairwise Wilcoxon rank-sum tests.", "HumanEvalRequest", _HUMAN_EVAL_EXAMPLE,
            {"description": "Raters passed and failed, systems best first, significance matrix.",
             "content": _json_of("HumanEvalResponse")}, ("400", "413", "422")),
        **openapi_v2.operations(_v2_responses, lambda: _refused("V2Error")),
    }
