"""The request body: read whole within the limit, refused when compressed or not UTF-8 JSON, validated by a schema."""
from __future__ import annotations

from typing import Any

from flask import request
from marshmallow import Schema, ValidationError
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from service.api.context import settings
from service.api.schemas import flatten_messages
from service.errors import BadJson, InvalidRequest, ServiceError, TooLarge
from service.json_body import BadText, JsonTextError, NotAnObject, RepeatedKey, TooDeep, parse_object


def _parse(raw: bytes, depth: int) -> dict[str, Any]:
    """json_body's reading (UTF-8 only, BOM dropped, each key once, no lone surrogates), its refusals
    as the contract's answers: nesting is a limit GET /models lists, so 413 as the others; else 400."""
    try:
        return parse_object(raw, max_depth=depth, constants=False)  # NaN is not JSON: 400, with its path
    except RepeatedKey as exc:
        where = f" at {exc.path}" if exc.path else ""
        raise BadJson(f"The request body is ambiguous{where}: {exc}; send each key once.",
                      {**({exc.path: str(exc)} if exc.path else {}), "key": exc.key}) from None
    except TooDeep as exc:
        where = f" at {exc.path}" if exc.path else ""
        raise TooLarge(f"The request body is nested deeper than {depth} levels{where}; send it flatter.",
                       {**({exc.path: str(exc)} if exc.path else {}), "max_json_depth": depth}) from None
    except BadText as exc:
        raise BadJson(f"The request body is not usable JSON at {exc.path}: {exc}", {exc.path: str(exc)}) from None
    except NotAnObject as exc:
        raise BadJson(f"The request body must be a JSON object, not {exc.found}.") from None
    except JsonTextError as exc:  # NotUtf8, NotJson (a number past 4,300 digits with its path)
        raise BadJson(f"The request body is not valid JSON{f' at {exc.path}' if exc.path else ''}: {exc}.",
                      {exc.path: str(exc)} if exc.path else None) from None


def _refuse_compressed(header: str, accepted: tuple[str, ...], detail: str) -> None:
    """400 naming a coding of the body that is not undone here. Content codings are never
    decompressed (no decompression bombs; a request is at most max_body_bytes anyway). Of transfer codings
    the server's HTTP parser (h11 under uvicorn, service/server/worker.py) undoes chunked and refuses any other
    before the app; under another server this check does the same, or a gzip body would be refused as
    'UTF-16 or UTF-32'."""
    codings = [c.strip().lower() for c in request.headers.get(header, "").split(",")]
    other = [c for c in codings if c and c not in accepted]
    if other:
        raise BadJson(f"The body is sent with {header} {other[0][:40]!r}, which is not accepted; send it "
                      "uncompressed, with Content-Length or chunked.", {header: detail})


def load_body(schema: Schema) -> dict[str, Any]:
    """The request's JSON object validated by `schema`: 400 if not a JSON object, 422 if invalid."""
    return validate(schema, parse_json(read_body()))


def parse_json(raw: bytes) -> dict[str, Any]:
    """A body's bytes as a JSON object, refused as the contract says (400, or 413 for nesting)."""
    if not raw.strip():
        raise BadJson("The request body is empty; send a JSON object.")
    if b"\x00" in raw:  # never in JSON text (a NUL in a string is written \u0000): UTF-16 or UTF-32
        raise BadJson("The request body holds NUL bytes: it is UTF-16 or UTF-32, or not text; send UTF-8 JSON.")
    return _parse(raw, settings().max_json_depth)


def validate(schema: Schema, data: dict[str, Any]) -> dict[str, Any]:
    """`data` loaded by `schema`; 422 naming each invalid field."""
    try:
        return schema.load(data)
    except ValidationError as exc:
        raise InvalidRequest("The request does not match the schema; see details for each field.",
                             flatten_messages(exc.messages)) from None


def read_body() -> bytes:
    """The request's body, whole, within the limit (413) and uncompressed (400)."""
    try:
        raw = request.get_data(cache=True)  # over MAX_CONTENT_LENGTH raises 413 here
    except (HTTPException, ServiceError):  # 413, or 408 from the worker's read deadline
        raise
    except Exception as exc:  # noqa: BLE001 - the server's reader: bad chunk sizes, a client gone mid-body
        raise BadJson(f"The request body could not be read ({type(exc).__name__}): send it whole, with a "
                      "Content-Length or well-formed chunked encoding.") from None
    limit = settings().max_body_bytes
    if (request.content_length or 0) > limit or len(raw) > limit:
        # MAX_CONTENT_LENGTH is the limit + 1 (service/app.py): a chunked body has no length to check
        # up front, and werkzeug stops reading it there without an error, so a body of exactly the
        # limit is read whole and one byte more tells that it went on.
        raise RequestEntityTooLarge()
    _refuse_compressed("Content-Encoding", ("identity",), "Only identity.")
    _refuse_compressed("Transfer-Encoding", ("identity", "chunked"), "Only chunked.")
    return raw
