"""The Open Inference Protocol v2 (KServe, Triton, MLServer) beside the v1 API, on the same data plane.

Health and metadata for the server and each model, and `infer`: BYTES inputs named after the item
fields, one element an item, and the FP32 output `score`; with the parameter `rerank: true`, one
`context` and the candidates as `response` give `index` (INT64) and `score`, best first. The BYTES output
`warning` carries v1's `warnings` as tensor elements: each reply's code, "" where none. Each infer
runs as a v1 body through the same schema, limits and data plane, so the scores equal /score's;
errors take the protocol's `{"error": "..."}` form (service/errors.py, error_body). docs/api.md has
the inputs' encoding.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request

from service.api import dataplane
from service.api.context import settings, store
from service.api.body import parse_json, read_body, validate
from service.version import VERSION  # the server's own version, as the protocol asks (not the document's)
from service.api.schemas import RERANK_REQUEST, SCORE_REQUEST
from service.api.v2_tensors import (HEADER_LENGTH, ITEM_INPUTS, PLATFORM, SERVER_NAME, Tensor, output,
                                    output_bytes, read_inputs, split_body)
from service.errors import BadJson, InvalidRequest, NotFound, NotReady, ServiceError, TooLarge
from service.json_body import JsonTextError, NotJson, RepeatedKey, TooDeep, parse
from service.scorers.base import Scorer

bp = Blueprint("inference_v2", __name__, url_prefix="/v2")



@bp.get("")
def server_metadata() -> Response:
    return jsonify({"name": SERVER_NAME, "version": VERSION, "extensions": ["binary_tensor_data"]})


@bp.get("/health/live")
def live() -> Response:
    return jsonify({"live": True})


@bp.get("/health/ready")
def ready() -> Response:
    is_ready, _ = dataplane.readiness(store())
    return _readiness({"ready": is_ready}, is_ready)


@bp.get("/models/<name>")
@bp.get("/models/<name>/versions/<version>")
def model_metadata(name: str, version: str | None = None) -> Response:
    scorer = _scorer(name, version)
    manifest = scorer.manifest
    inputs = ["turns"] if manifest.kind == "dialogue" else [f for f in ITEM_INPUTS if f in manifest.requires]
    outputs = [("score", "FP32")] + ([("human_percentile", "FP32")] if scorer.human_percentile is not None else [])
    return jsonify({"name": name, "versions": [manifest.version], "platform": PLATFORM,
                    "inputs": [{"name": f, "datatype": "BYTES", "shape": [-1]} for f in inputs],
                    "outputs": [{"name": o, "datatype": datatype, "shape": [-1]}
                                for o, datatype in [*outputs, ("warning", "BYTES")]]})


@bp.get("/models/<name>/ready")
@bp.get("/models/<name>/versions/<version>/ready")
def model_ready(name: str, version: str | None = None) -> Response:
    try:
        _scorer(name, version)  # 404 for a model (or version) not served
    except NotReady:
        return _readiness({"name": name, "ready": False}, False)
    return _readiness({"name": name, "ready": True}, True)


@bp.post("/models/<name>/infer")
@bp.post("/models/<name>/versions/<version>/infer")
def infer(name: str, version: str | None = None) -> Response:
    json_part, binary = split_body(read_body(), request.headers.get(HEADER_LENGTH))
    try:
        body = parse_json(json_part)
    except BadJson as error:  # where the header cut the body elsewhere than the JSON's end, say that first
        if HEADER_LENGTH in request.headers:
            error.message = f"The first {len(json_part)} bytes ({HEADER_LENGTH}) are not the request's JSON: " + \
                error.message
            error.details = {**error.details, HEADER_LENGTH: "Check it: the JSON part's length in bytes."}
        raise
    tensors = read_inputs(body, binary)
    parameters = body.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise InvalidRequest("`parameters` must be an object.", {"parameters": "Not an object."})
    if body.get("id") is not None and not isinstance(body["id"], str):  # the answer echoes it, a string
        raise InvalidRequest("`id` is a string, which the answer echoes.", {"id": "Not a string."})
    if version is not None:
        _scorer(name, version)
    options, rerank = _options(parameters), parameters.get("rerank", False)
    if not isinstance(rerank, bool):
        raise InvalidRequest("The parameter `rerank` is true or false.", {"parameters.rerank": "Not a boolean."})
    for only_reranking in ("top_k", "exclude_warned"):
        if only_reranking in parameters and not rerank:
            raise InvalidRequest(f"The parameter `{only_reranking}` applies to a re-ranking (`rerank: true`).",
                                 {f"parameters.{only_reranking}": "Without `rerank: true`."})
    if rerank:
        outputs, served_version = _rerank(name, tensors, options, parameters.get("top_k"),
                                          _exclude_warned(parameters))
    else:
        outputs, served_version = _score(name, tensors, options)
    out: dict[str, Any] = {"model_name": name, "model_version": served_version,
                           "outputs": _requested_outputs(body, outputs)}
    if isinstance(body.get("id"), str):
        out["id"] = body["id"]
    return _infer_response(out, _binary_outputs(body, parameters))


# --- from tensors to the v1 bodies ------------------------------------------------------------------
def _score(name: str, tensors: dict[str, Tensor], options: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    _known(tensors, ("turns",) + ITEM_INPUTS)
    if "turns" in tensors and (beside := sorted(set(tensors) & set(ITEM_INPUTS))):
        raise InvalidRequest(f"`turns` scores whole dialogues, which read no {beside[0]!r}; send `turns` alone, "
                             "or context and response without it.", {f"inputs.{n}": "Not read beside `turns`."
                                                                       for n in beside})
    if "turns" in tensors:
        items = [{"turns": _json_array(value, "turns", i)} for i, value in enumerate(tensors["turns"].values)]
    else:
        responses = _required(tensors, "response").values
        contexts = _per_item(tensors, "context", len(responses))
        references = _per_item(tensors, "reference", len(responses)) if "reference" in tensors else None
        items = []
        for i, response in enumerate(responses):
            item: dict[str, Any] = {"context": context_turns(contexts[i], i), "response": response}
            if references is not None:
                item["reference"] = references[i]
            items.append(item)
    # one element given for every item is element 0 in an error, not an element the request lacks
    shared = {n for n in ("context", "reference") if n in tensors and len(tensors[n].values) == 1}
    with _v2_names(lambda path: _score_path(path, shared)):
        answer = dataplane.score(store(), validate(SCORE_REQUEST, {"model": name, "items": items,
                                                                   "options": options}), settings())
    percentile = [output("human_percentile", "FP32", answer["human_percentile"])] if "human_percentile" in answer else []
    warning = _warning_codes(answer)
    return [output("score", "FP32", answer["scores"]), *percentile,
            output("warning", "BYTES", [warning.get(i, "") for i in range(len(items))])], answer["version"]


def _rerank(name: str, tensors: dict[str, Tensor], options: dict[str, Any], top_k: Any,
            exclude_warned: list[str]) -> tuple[list[dict[str, Any]], str]:
    if "turns" in tensors:
        raise InvalidRequest("`turns` is a whole dialogue, which a re-ranking does not read: send one `context` "
                             "and the candidates as `response`.", {"inputs.turns": "Not read by a re-ranking."})
    _known(tensors, ITEM_INPUTS)
    context = _required(tensors, "context").values
    if len(context) != 1:
        raise InvalidRequest("A re-ranking reads one `context` (its candidates are `response`).",
                             {"inputs.context": "Must hold one element."})
    reference = tensors["reference"].values if "reference" in tensors else [None]
    if len(reference) != 1:
        raise InvalidRequest("A re-ranking reads at most one `reference`.", {"inputs.reference": "One element."})
    body = {"model": name, "context": context_turns(context[0], 0), "candidates": _required(tensors, "response").values,
            "reference": reference[0], "top_k": top_k, "exclude_warned": exclude_warned, "options": options}
    with _v2_names(_rerank_path):
        answer = dataplane.rerank(store(), validate(RERANK_REQUEST, body), settings())
    ranking = answer["ranking"]
    percentile = ([output("human_percentile", "FP32", [entry["human_percentile"] for entry in ranking])]
                  if ranking and "human_percentile" in ranking[0] else [])
    warning = _warning_codes(answer)
    return ([output("index", "INT64", [entry["index"] for entry in ranking]),
             output("score", "FP32", [entry["score"] for entry in ranking]), *percentile,
             output("warning", "BYTES", [warning.get(entry["index"], "") for entry in ranking])], answer["version"])


def _warning_codes(answer: dict[str, Any]) -> dict[int, str]:
    """v1's `warnings` by the index of the item or candidate each names (one a reply, warnings.py)."""
    return {warning["index"]: warning["code"] for warning in answer.get("warnings", [])}


def _exclude_warned(parameters: dict[str, Any]) -> list[str]:
    """The parameter `exclude_warned`: warning codes, comma-separated in a string (a v2 parameter is a
    scalar), as v1's list; the schema checks each code."""
    raw = parameters.get("exclude_warned", "")
    if not isinstance(raw, str):
        raise InvalidRequest("The parameter `exclude_warned` is a string of warning codes, comma-separated "
                             "(`\"empty,no_words\"`).", {"parameters.exclude_warned": "Not a string."})
    return [code.strip() for code in raw.split(",") if code.strip()]


# --- the v1 body's field paths in an error, as the v2 request names them --------------------------
_ITEM_FIELD = re.compile(r"items\.(\d+)\.(context|response|reference|turns)(.*)")
_RERANK_FIELD = re.compile(r"(candidates|context|reference)((?:\.\d+)*)")
_RERANK_INPUT = {"candidates": "response", "context": "context.0", "reference": "reference.0"}


def _parameter_path(path: str) -> str:
    return f"parameters.{path}" if path.split(".")[0] in ("options", "top_k", "exclude_warned") else path


def _score_path(path: str, shared: Collection[str] = ()) -> str:
    """`items.3.response` -> `inputs.response.3` (an item is element 3 of each input, element 0 of an input
    in `shared`, whose one element serves every item); options -> parameters."""
    match = _ITEM_FIELD.fullmatch(path)
    if match:
        return f"inputs.{match[2]}.{'0' if match[2] in shared else match[1]}{match[3]}"
    return "inputs" if path == "items" else _parameter_path(path)


def _rerank_path(path: str) -> str:
    """`candidates.3` -> `inputs.response.3`, `context.2` -> `inputs.context.0.2`; options -> parameters."""
    match = _RERANK_FIELD.fullmatch(path)
    if match:
        return f"inputs.{_RERANK_INPUT[match[1]]}{match[2]}"
    return _parameter_path(path)


@contextmanager
def _v2_names(rename: Callable[[str], str]) -> Iterator[None]:
    """An error of the v1 body an infer runs as, its details keyed by the v2 request's own names."""
    try:
        yield
    except ServiceError as error:
        error.details = {rename(str(path)): problem for path, problem in error.details.items()}
        raise


def _known(tensors: dict[str, Tensor], names: tuple[str, ...]) -> None:
    unknown = sorted(set(tensors) - set(names))
    if unknown:
        raise InvalidRequest(f"Unknown input {unknown[0]!r}; the inputs are {', '.join(names)}.",
                             {f"inputs.{n}": "Unknown input." for n in unknown})


def _required(tensors: dict[str, Tensor], name: str) -> Tensor:
    if name not in tensors:
        raise InvalidRequest(f"The input {name!r} is required.", {f"inputs.{name}": "Required."})
    return tensors[name]


def _per_item(tensors: dict[str, Tensor], name: str, count: int) -> list[str]:
    """One element an item, or one for every item."""
    values = _required(tensors, name).values
    if len(values) == 1:
        return values * count
    if len(values) != count:
        raise InvalidRequest(f"Input {name!r} has {len(values)} elements for {count} responses.",
                             {f"inputs.{name}": "One element per response, or one for all."})
    return values


def context_turns(value: str, index: int) -> list[str]:
    """A context element: the turns of the JSON array of strings it is, else its lines. Text that only
    looks like an array ("[laughs] that is funny") is text; an array of anything but strings is a 422."""
    if not value.lstrip().startswith("["):
        return lines(value)
    try:
        turns = _embedded_json(value, f"inputs.context.{index}")
    except NotJson:
        return lines(value)
    if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
        raise InvalidRequest(f"Element {index} of 'context' is a JSON array, but of other things than strings "
                             "(the turns); send an array of strings, or the turns joined by newlines.",
                             {f"inputs.context.{index}": "Not an array of strings."})
    return turns


def lines(text: str) -> list[str]:
    """The turns of text joined by newlines: LF or CRLF ends a turn, and a final one ends the last turn
    (it would otherwise add an empty turn, which changes a context-reading model's score)."""
    turns = text.replace("\r\n", "\n").split("\n")
    return turns[:-1] if len(turns) > 1 and not turns[-1] else turns


def _json_array(value: str, name: str, index: int) -> list[Any]:
    where = f"inputs.{name}.{index}"
    try:
        parsed = _embedded_json(value, where)
    except NotJson:
        parsed = None
    if not isinstance(parsed, list):
        raise InvalidRequest(f"Element {index} of {name!r} is not a JSON array.", {where: "Invalid."})
    return parsed


def _options(parameters: dict[str, Any]) -> dict[str, Any]:
    raw = parameters.get("options")
    if raw is None:
        return {}
    try:
        options = _embedded_json(raw, "parameters.options") if isinstance(raw, str) else None
    except NotJson:
        options = None
    if not isinstance(options, dict):
        raise InvalidRequest("The parameter `options` is a JSON object in a string.", {"parameters.options": "Invalid."})
    return options


def _embedded_json(text: str, where: str) -> Any:
    """The JSON value in a string of the request (`where`), held to the body's rules (service/json_body.py):
    nesting within max_json_depth (413, a limit), no repeated key, lone surrogate or non-finite number (422).
    A syntax error is left to the caller as NotJson: what such text means depends on the input."""
    depth = settings().max_json_depth
    try:
        return parse(text.encode("utf-8", "surrogatepass"), max_depth=depth, finite=True)
    except NotJson:
        raise
    except TooDeep:
        raise TooLarge(f"{where} is JSON nested deeper than {depth} levels; send it flatter.",
                       {where: "Nested too deep.", "max_json_depth": depth}) from None
    except RepeatedKey as exc:
        inside = f" (at {exc.path})" if exc.path and exc.path != "(body)" else ""
        raise InvalidRequest(f"{where} is ambiguous JSON{inside}: {exc}; send each key once.",
                             {where: "Repeated key."}) from None
    except JsonTextError as exc:  # a lone surrogate, NaN or a number past a double, text not UTF-8
        inside = f" (at {exc.path})" if exc.path and exc.path != "(body)" else ""
        raise InvalidRequest(f"{where} is not usable JSON{inside}: {exc}", {where: "Not usable JSON."}) from None


def _requested_outputs(body: dict[str, Any], outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    wanted = body.get("outputs")
    if wanted is None or wanted == []:  # none named: all of them; `""` or `{}` is a malformed list, as "score" is
        return outputs
    by_name = {o["name"]: o for o in outputs}
    if not isinstance(wanted, list) or not all(isinstance(o, dict) and isinstance(o.get("name"), str) for o in wanted):
        raise InvalidRequest(f"`outputs` is a list of objects, each naming an output (`{{\"name\": \"score\"}}`); "
                             f"this model gives {', '.join(by_name)}.", {"outputs": "Not a list of named outputs."})
    names = [o["name"] for o in wanted]
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise InvalidRequest(f"Unknown output {unknown[0]!r}; this model gives {', '.join(by_name)}.",
                             {"outputs": "Unknown output."})
    repeated = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if repeated is not None:  # as an input given twice: one answer per output name
        raise InvalidRequest(f"Output {repeated!r} is named twice; name each output once.", {"outputs": "Repeated."})
    return [by_name[n] for n in names]


def _binary_outputs(body: dict[str, Any], parameters: dict[str, Any]) -> Callable[[str], bool]:
    """Whether an output goes as binary data (the extension): its own `binary_data`, else the request's
    `binary_data_output` (tritonclient asks for binary by default, and its readers of BYTES expect bytes)."""
    default = parameters.get("binary_data_output") is True
    asked: dict[str, bool] = {}
    for wanted in body.get("outputs") or []:  # a list of named objects: _requested_outputs checked it
        own = wanted.get("parameters")
        flag = own.get("binary_data") if isinstance(own, dict) else None
        if isinstance(flag, bool):
            asked[wanted["name"]] = flag
    return lambda name: asked.get(name, default)


def _infer_response(out: dict[str, Any], binary: Callable[[str], bool]) -> Response:
    """The infer answer: all JSON, or, where an output goes as binary data, the JSON (its length in
    Inference-Header-Content-Length) then each such output's bytes in the outputs' order."""
    tensors: list[dict[str, Any]] = []
    tail: list[bytes] = []
    for tensor in out["outputs"]:
        if binary(tensor["name"]):
            raw = output_bytes(tensor)
            tensor = {**{k: v for k, v in tensor.items() if k != "data"}, "parameters": {"binary_data_size": len(raw)}}
            tail.append(raw)
        tensors.append(tensor)
    if not tail:
        return jsonify(out)
    header = current_app.json.dumps({**out, "outputs": tensors}, separators=(",", ":")).encode("utf-8")
    return Response(header + b"".join(tail), content_type="application/octet-stream",
                    headers={HEADER_LENGTH: str(len(header))})


# --- models and readiness ----------------------------------------------------------------------------
def _scorer(name: str, version: str | None) -> Scorer:
    """The served model (404 unknown, 503 loading), and 404 for a version it is not."""
    scorer = store().served(name)
    if version is not None and version != scorer.manifest.version:
        raise NotFound(f"Model {name!r} is served at version {scorer.manifest.version}, not {version}.",
                       {"versions": [scorer.manifest.version]})
    return scorer


def _readiness(body: dict[str, Any], is_ready: bool) -> Response:
    """The protocol's health answer: 200 for true, a 4xx for false."""
    response = jsonify(body)
    response.status_code = 200 if is_ready else 400
    return response
