"""The OpenAPI 3 document, generated from the marshmallow schemas that validate requests."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin

from service import schemas

VERSION = "1.0.0"

_ERRORS = {
    "400": "The body is not JSON, not a JSON object, or repeats a key within one object (`bad_json`).",
    "401": "A token is configured and missing or wrong (`unauthorized`).",
    "404": "Unknown model (`unknown_model`).",
    "413": "Over a configured limit (`too_large`); GET /models lists the limits.",
    "422": "Schema violation (`invalid_request`); details map field paths to messages.",
    "405": "The path exists but not for this method; the `Allow` header lists the right ones.",
    "500": "A bug in the service (`internal`); never the answer to bad input.",
    "503": "Models are not loaded (`not_ready`).",
}
_ALWAYS = ("405", "500")  # any operation can answer these

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
_HUMAN_EVAL_EXAMPLE = {
    "ratings": [
        {"rater": "w1", "system": "A", "item": "d1", "scores": {"interesting": 73, "fun": 60, "robotic": 20}},
        {"rater": "w1", "system": "B", "item": "d2", "scores": {"interesting": 55, "fun": 48, "robotic": 35}},
        {"rater": "w1", "system": "degraded", "item": "d3", "scores": {"interesting": 10, "fun": 5, "robotic": 90}},
        {"rater": "w2", "system": "A", "item": "d4", "scores": {"interesting": 80, "fun": 71, "robotic": 15}},
        {"rater": "w2", "system": "B", "item": "d5", "scores": {"interesting": 62, "fun": 50, "robotic": 30}},
        {"rater": "w2", "system": "degraded", "item": "d6", "scores": {"interesting": 20, "fun": 12, "robotic": 85}},
    ],
    "reverse": ["robotic", "repetitive"], "scale": [0, 100], "qc_system": "degraded", "alpha": 0.05,
}


def _post(summary: str, request_schema: str, example: dict[str, Any], ok: dict[str, Any],
          codes: tuple[str, ...]) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": ok}
    for code in sorted(codes + _ALWAYS):
        responses[code] = {"description": _ERRORS[code],
                           "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    return {"post": {"summary": summary, "security": [{"bearer": []}, {}],
                     "requestBody": {"required": True, "content": {"application/json": {
                         "schema": {"$ref": f"#/components/schemas/{request_schema}"}, "example": example}}},
                     "responses": responses}}


def _get(summary: str, content: dict[str, Any], codes: tuple[str, ...] = ()) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": summary, "content": content}}
    for code in sorted(codes + _ALWAYS):
        responses[code] = {"description": _ERRORS[code],
                           "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    return {"get": {"summary": summary, "responses": responses}}


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
    for schema_name, prop in (("CorrelateRequest", "confidence"), ("HumanEvalRequest", "alpha")):
        spec.components.schemas[schema_name]["properties"][prop].update(exclusiveMinimum=True, exclusiveMaximum=True)
    # `items` holds Item or Dialogue objects depending on the model's kind: say so exactly.
    spec.components.schemas["ScoreRequest"]["properties"]["items"]["items"] = {
        "oneOf": [{"$ref": "#/components/schemas/Item"}, {"$ref": "#/components/schemas/Dialogue"}]}
    spec.components.schemas["CorrelateRequest"]["properties"]["human"] = {
        "type": "array", "minItems": 1, "description": "Human scores, or several ratings per item (averaged).",
        "items": {"oneOf": [{"type": "number"}, {"type": "array", "minItems": 1, "items": {"type": "number"}}]}}
    spec.components.security_scheme("bearer", {"type": "http", "scheme": "bearer"})
    spec.path("/healthz", operations=_get("Liveness: the process serves.", _json_of("Status")))
    spec.path("/readyz", operations=_get("Readiness: every configured model loaded and warmed up.", _json_of("Status"),
                                         ("503",)))
    spec.path("/models", operations=_get("Served models with versions, providers and cards; limits.",
                                         _json_of("ModelsResponse")))
    spec.path("/metrics", operations=_get("Prometheus metrics of all workers.", {"text/plain": {"schema": {
        "type": "string"}}}))
    spec.path("/openapi.json", operations=_get("This document.", _ANY_JSON))
    codes = ("400", "401", "404", "413", "422", "503")
    spec.path("/score", operations=_post("Score replies (or dialogues) with one model.", "ScoreRequest",
                                         _SCORE_EXAMPLE, {"description": "Scores in item order (with `models`: "
                                                                         "one such response per model).",
                                                          "content": {"application/json": {"schema": {"oneOf": [
                                                              {"$ref": "#/components/schemas/ScoreResponse"},
                                                              {"$ref": "#/components/schemas/MultiScoreResponse"}]}}}},
                                         codes))
    spec.path("/rerank", operations=_post("Rank candidate replies, best first.", "RerankRequest",
                                          {"model": "autojudge", "context": ["hi! how was your weekend?"],
                                           "candidates": ["i don't know.", "great, i went hiking!"], "top_k": 1},
                                          {"description": "Ranking, best first; ties keep input order.",
                                           "content": _json_of("RerankResponse")}, codes))
    spec.path("/correlate", operations=_post(
        "Correlation of metric scores with human judgements: Pearson, Spearman, Kendall with p-values, bootstrap "
        "intervals, item and system level, pairwise comparisons of metrics.", "CorrelateRequest",
        _CORRELATE_EXAMPLE, {"description": "Per metric, level and method: r, p, ci, n (null with a reason when "
                                             "undefined); comparisons.", "content": _json_of("CorrelateResponse")},
        ("400", "401", "413", "422")))
    spec.path("/human-eval", operations=_post(
        "Reliable human assessment (Ji et al. 2022): z-scores, rater quality control, system ranking, "
        "pairwise Wilcoxon rank-sum tests.", "HumanEvalRequest", _HUMAN_EVAL_EXAMPLE,
        {"description": "Raters passed and failed, systems best first, significance matrix.",
         "content": _json_of("HumanEvalResponse")}, ("400", "401", "413", "422")))
    document = spec.to_dict()
    _tighten(document)
    return document
