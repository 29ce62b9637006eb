"""The Open Inference Protocol v2 paths of the OpenAPI document (service/api/inference_v2.py).

Their bodies are the protocol's, read and written in code rather than by marshmallow schemas, so their
shapes are written here as JSON Schema; an error on these paths is `{"error": "<message>"}`
(service/errors.py, error_body) with the status v1 would give.
"""
from __future__ import annotations

from typing import Any

from service.api.v2_tensors import HEADER_LENGTH, ITEM_INPUTS, PLATFORM, SERVER_NAME

PREFIX = "/v2"
_OUTPUTS = {"score": "FP32", "index": "INT64", "human_percentile": "FP32", "warning": "BYTES"}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _object(properties: dict[str, Any], required: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


_SHAPE = {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}}
_TENSOR_METADATA = _object({"name": {"type": "string"}, "datatype": {"type": "string", "enum": ["BYTES", "FP32"]},
                            "shape": {"type": "array", "items": {"type": "integer"}}}, ("name", "datatype", "shape"))
_INPUT_NAME = ("`context`, `response` and `reference` (one element per item; one `context` or `reference` element "
               "serves every item), or `turns` (a JSON array of {speaker, text} per dialogue). A `context` element "
               "is a JSON array of strings where its text parses as one, else the turns joined by newlines.")
_PARAMETERS = {"type": "object", "description": "Other parameters are ignored.", "properties": {
    "options": {"type": "string", "description": "The v1 `options` as a JSON object in a string."},
    "rerank": {"type": "boolean", "default": False, "description": (
        "One `context` and the candidates as `response`: the outputs are `index` and `score`, best first (and "
        "`human_percentile` where the model gives it), and `warning` in the same order.")},
    "top_k": {"type": "integer", "minimum": 1, "nullable": True, "description": "With `rerank: true` only."},
    "exclude_warned": {"type": "string", "description": (
        "With `rerank: true` only: warning codes, comma-separated (`empty,no_words`); the candidates warned with "
        "them are left out of the ranking, as v1's `exclude_warned`.")},
    "binary_data_output": {"type": "boolean", "default": False, "description": (
        "The binary tensor data extension: every output as binary data after the JSON, save one whose own "
        "`binary_data` says otherwise.")}}}
_INFER_REQUEST = _object({
    "id": {"type": "string", "description": "Echoed in the response."},
    "inputs": {"type": "array", "minItems": 1, "items": _ref("V2InferInput")},
    "parameters": _PARAMETERS,
    "outputs": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "enum": list(_OUTPUTS)},
        "parameters": {"type": "object", "properties": {"binary_data": {"type": "boolean", "description": (
            "The output as binary data after the JSON (the extension), or in `data`.")}}}}}},
}, ("inputs",))
_OUTPUT = _object({"name": {"type": "string", "enum": list(_OUTPUTS)},
                   "datatype": {"type": "string", "enum": sorted(set(_OUTPUTS.values()))},
                   "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                   "data": {"type": "array", "items": {"oneOf": [{"type": "number"}, {"type": "string"}]},
                            "description": "Absent where `parameters.binary_data_size` places the elements after "
                                           "the JSON."},
                   "parameters": {"type": "object", "properties": {"binary_data_size": {"type": "integer",
                                                                                        "minimum": 0}}}},
                  ("name", "datatype", "shape"))
_INFER_RESPONSE = _object({"model_name": {"type": "string"}, "model_version": {"type": "string"},
                           "id": {"type": "string"}, "outputs": {"type": "array", "items": _ref("V2InferOutput")}},
                          ("model_name", "model_version", "outputs"))


def _input(names: tuple[str, ...]) -> dict[str, Any]:
    return _object({
        "name": {"type": "string", "enum": list(names), "description": _INPUT_NAME},
        "datatype": {"type": "string", "enum": ["BYTES"]},
        "shape": _SHAPE,
        "data": {**_ref("V2BytesData"), "description": "The elements, flat or nested row-major; absent where "
                                                       "`parameters.binary_data_size` places them after the JSON."},
        "parameters": {"type": "object", "properties": {"binary_data_size": {"type": "integer", "minimum": 0}}},
    }, ("name", "datatype", "shape"))


def component_schemas() -> dict[str, dict[str, Any]]:
    """The v2 bodies' schemas by component name."""
    tensors = {"type": "array", "items": _ref("V2TensorMetadata")}
    return {
        "V2Error": _object({"error": {"type": "string", "description": (
            "The message, then `(field: problem; ...)`; the status is v1's, and v1's `code` is not sent.")}},
            ("error",)),
        "V2ServerMetadata": _object({"name": {"type": "string", "enum": [SERVER_NAME]}, "version": {"type": "string"},
                                     "extensions": {"type": "array", "items": {"type": "string"}}},
                                    ("name", "version", "extensions")),
        "V2Live": _object({"live": {"type": "boolean"}}, ("live",)),
        "V2Ready": _object({"ready": {"type": "boolean"}}, ("ready",)),
        "V2ModelReady": _object({"name": {"type": "string"}, "ready": {"type": "boolean"}}, ("name", "ready")),
        "V2TensorMetadata": _TENSOR_METADATA,
        "V2ModelMetadata": _object({"name": {"type": "string"}, "versions": {"type": "array", "items": {"type": "string"}},
                                    "platform": {"type": "string", "enum": [PLATFORM]},
                                    "inputs": tensors, "outputs": tensors},
                                   ("name", "versions", "platform", "inputs", "outputs")),
        "V2BytesData": {"type": "array", "items": {"oneOf": [{"type": "string"}, _ref("V2BytesData")]}},
        "V2InferInput": _input(("turns",) + ITEM_INPUTS),
        "V2InferRequest": _INFER_REQUEST,
        "V2InferOutput": _OUTPUT,
        "V2InferResponse": _INFER_RESPONSE,
    }


_NAME = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}, "description": "A served model."}
_VERSION = {"name": "version", "in": "path", "required": True, "schema": {"type": "string"},
            "description": "The model's version; another is a 404 naming the one served."}
_HEADER_LENGTH = {"name": HEADER_LENGTH, "in": "header", "required": False, "schema": {"type": "integer", "minimum": 1},
                  "description": "The binary tensor data extension: the bytes of JSON before the inputs' binary data."}
_NOT_READY = "Not ready (the protocol's answer): models still loading, or one failed to load."


def _json(schema: str) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(schema)}}


def _versioned(path: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """A model's path and its `/versions/{version}` twin, with their path parameters."""
    tail = path.removeprefix("/v2/models/{name}")
    return [(path, [_NAME]), (f"/v2/models/{{name}}/versions/{{version}}{tail}", [_NAME, _VERSION])]


def operations(errors: Any, refused: Any) -> dict[str, dict[str, Any]]:
    """Every v2 path's operations, before security. `errors(ok, codes)` gives an operation's responses
    with its error statuses and `refused()` a computing operation's 503, both in the v2 error form."""
    paths = {
        PREFIX: _get(errors, "v2ServerMetadata", "Server metadata (Open Inference Protocol v2).", "V2ServerMetadata"),
        f"{PREFIX}/health/live": _get(errors, "v2Live", "Liveness (v2).", "V2Live"),
        f"{PREFIX}/health/ready": _get(errors, "v2Ready", "Readiness (v2): the models are loaded.", "V2Ready",
                                       not_ready=True),
    }
    for suffix, operation_id in (("", "v2ModelMetadata"), ("/ready", "v2ModelReady"), ("/infer", "v2Infer")):
        for path, parameters in _versioned(f"/v2/models/{{name}}{suffix}"):
            name = operation_id + ("Version" if len(parameters) > 1 else "")
            if suffix == "/infer":
                paths[path] = {"post": _infer(name, parameters, errors, refused)}
            elif suffix == "/ready":
                paths[path] = _get(errors, name, "Whether the model is ready.", "V2ModelReady", ("404",), parameters,
                                   not_ready=True)
            else:
                paths[path] = _get(errors, name, "A model's inputs and outputs as tensors.", "V2ModelMetadata",
                                   ("404", "503"), parameters)
    return paths


def _get(errors: Any, operation_id: str, summary: str, schema: str, codes: tuple[str, ...] = (),
         parameters: list[dict[str, Any]] | None = None, not_ready: bool = False) -> dict[str, Any]:
    """A GET; `not_ready`: the protocol's health answer, whose 400 is also the false one (`schema`)."""
    responses = errors({"description": summary, "content": _json(schema)}, codes)
    if not_ready:
        responses["400"] = {"description": f"{_NOT_READY} Else the error of a malformed request.",
                            "content": {"application/json": {"schema": {"oneOf": [_ref(schema), _ref("V2Error")]}}}}
    operation: dict[str, Any] = {"operationId": operation_id, "summary": summary, "responses": responses}
    if parameters:
        operation["parameters"] = parameters
    return {"get": operation}


def _infer(operation_id: str, parameters: list[dict[str, Any]], errors: Any, refused: Any) -> dict[str, Any]:
    responses = {**errors({"description": "`score` (FP32) per item; with `rerank: true`, `index` (INT64) and "
                                          "`score`, best first; `warning` (BYTES): each reply's warning code, "
                                          "\"\" where none. With an output asked for as binary data, "
                                          f"a V2InferResponse of {HEADER_LENGTH} bytes, then each such output's "
                                          "elements (little-endian; BYTES: a 4-byte length and the UTF-8 bytes).",
                            "content": {**_json("V2InferResponse"),
                                        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
                          ("400", "404", "413", "422")), "503": refused()}
    example = {"inputs": [{"name": "context", "datatype": "BYTES", "shape": [1], "data": ["how was your weekend?"]},
                          {"name": "response", "datatype": "BYTES", "shape": [2],
                           "data": ["i don't know.", "great, i went hiking!"]}],
               "parameters": {"rerank": True}}
    return {"operationId": operation_id, "summary": "Score replies or dialogues, or re-rank candidates (v2).",
            "parameters": [*parameters, "RequestTimeout", _HEADER_LENGTH],  # apispec: a component by name
            "requestBody": {"required": True, "description": (
                f"JSON; or, with the binary tensor data extension, a V2InferRequest of {HEADER_LENGTH} bytes, then "
                "each binary input's elements, each a 4-byte little-endian length and that many bytes of UTF-8."),
                "content": {"application/json": {"schema": _ref("V2InferRequest"), "example": example},
                            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
            "responses": responses}
