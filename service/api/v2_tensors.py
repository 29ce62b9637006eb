"""Open Inference Protocol v2 tensors: an infer request's inputs read as strings, the outputs written.

Inputs come as JSON (`data`, nested row-major or flat) or, with the protocol's binary tensor data
extension (what tritonclient sends by default), as bytes after a JSON header whose length the
`Inference-Header-Content-Length` header gives; a BYTES element there is a 4-byte little-endian
length and that many bytes. Only BYTES inputs exist here: every model reads text.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

from service.errors import BadJson, InvalidRequest

HEADER_LENGTH = "Inference-Header-Content-Length"
SERVER_NAME = "dialscore"
PLATFORM = "dialscore"  # a model is an ONNX graph (or none) with its pre- and post-processing, not one graph
ITEM_INPUTS = ("context", "response", "reference")  # a reply model's inputs; a dialogue model's is `turns`
_LENGTH = struct.Struct("<I")
_NUMBER_FORMAT = {"FP32": "f", "INT64": "q"}  # the outputs' numeric datatypes, as struct packs them


@dataclass
class Tensor:
    """One input: its name and its elements in row-major order (the first axis is the batch)."""

    name: str
    shape: list[int]
    values: list[str]


def split_body(raw: bytes, header_length: str | None) -> tuple[bytes, bytes]:
    """The JSON part and the binary part of an infer body (all JSON without the extension's header)."""
    if header_length is None:
        return raw, b""
    if not header_length.strip().isascii() or not header_length.strip().isdigit():
        raise BadJson(f"{HEADER_LENGTH} must be a whole number of bytes.", {HEADER_LENGTH: "Not a whole number."})
    size = int(header_length)
    if size == 0:  # parse_json would call the whole body empty
        raise BadJson(f"{HEADER_LENGTH} is 0: the request's JSON part (its `inputs`) is empty; give its length in "
                      "bytes, or leave the header out for an all-JSON body.", {HEADER_LENGTH: "Zero."})
    if size > len(raw):
        raise BadJson(f"{HEADER_LENGTH} ({size}) is longer than the body ({len(raw)} bytes).",
                      {HEADER_LENGTH: "Longer than the body."})
    return raw[:size], raw[size:]


def read_inputs(request: dict[str, Any], binary: bytes) -> dict[str, Tensor]:
    """The request's inputs by name, each checked: BYTES, a shape that matches its elements, UTF-8 text.
    Checked in code, not by a schema: an input's data may lie in the binary part after the JSON, so the
    checks go with reading those bytes in the inputs' order."""
    inputs = request.get("inputs")
    if not isinstance(inputs, list) or not inputs:
        raise InvalidRequest("An infer request needs a non-empty `inputs` list.", {"inputs": "Required."})
    tensors: dict[str, Tensor] = {}
    offset = 0
    for i, spec in enumerate(inputs):
        where = f"inputs.{i}"
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise InvalidRequest("Each input is an object with a `name`.", {where: "Needs a name."})
        name = spec["name"]
        if spec.get("datatype") != "BYTES":
            raise InvalidRequest(f"Input {name!r} must be BYTES (text).", {f"{where}.datatype": "Must be BYTES."})
        shape = spec.get("shape")
        if (not isinstance(shape, list) or not shape
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
            raise InvalidRequest(f"Input {name!r} needs a shape of whole numbers.", {f"{where}.shape": "Invalid."})
        count = math.prod(shape)
        parameters = spec.get("parameters") or {}
        size = parameters.get("binary_data_size") if isinstance(parameters, dict) else None
        if size is not None:
            if not isinstance(size, int) or isinstance(size, bool) or size < 0 or offset + size > len(binary):
                raise BadJson(f"Input {name!r}: binary_data_size does not fit the body.",
                              {f"{where}.parameters.binary_data_size": "Does not fit."})
            values = _binary_bytes(binary[offset:offset + size], name, where)
            offset += size
        elif "data" in spec:
            values = _flat(spec["data"], name, where)
        else:
            raise InvalidRequest(f"Input {name!r} has neither `data` nor binary data.", {where: "No data."})
        if len(values) != count:
            raise InvalidRequest(f"Input {name!r} has {len(values)} elements where its shape {shape} holds {count}.",
                                 {f"{where}.shape": "Does not match the data."})
        if name in tensors:
            raise InvalidRequest(f"Input {name!r} is given twice.", {where: "Repeated."})
        tensors[name] = Tensor(name, shape, values)
    if offset != len(binary):
        raise BadJson("The body holds binary data that no input claims.", {HEADER_LENGTH: "Binary data left over."})
    return tensors


def _flat(data: Any, name: str, where: str) -> list[str]:
    if not isinstance(data, list):  # the protocol's tensor data is an array, even of one element
        raise InvalidRequest(f"Input {name!r}: `data` is an array of the elements (flat or nested, row-major), "
                             "even for one.", {f"{where}.data": "Not an array."})
    out: list[str] = []
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, str):
            out.append(node)
        else:
            raise InvalidRequest(f"Input {name!r}: BYTES elements are strings.", {f"{where}.data": "Not a string."})
    return out


def _binary_bytes(raw: bytes, name: str, where: str) -> list[str]:
    out: list[str] = []
    at = 0
    while at < len(raw):
        if at + _LENGTH.size > len(raw):
            raise BadJson(f"Input {name!r}: a BYTES element's length is cut off.", {where: "Truncated."})
        (size,) = _LENGTH.unpack_from(raw, at)
        at += _LENGTH.size
        if at + size > len(raw):
            raise BadJson(f"Input {name!r}: a BYTES element runs past its data.", {where: "Truncated."})
        try:
            out.append(raw[at:at + size].decode("utf-8"))
        except UnicodeDecodeError:
            raise InvalidRequest(f"Input {name!r}: an element is not UTF-8 text.", {where: "Not UTF-8."}) from None
        at += size
    return out


def output(name: str, datatype: str, data: list[Any]) -> dict[str, Any]:
    """One output tensor, one axis, as JSON."""
    return {"name": name, "datatype": datatype, "shape": [len(data)], "data": data}


def output_bytes(tensor: dict[str, Any]) -> bytes:
    """An output's elements as the binary tensor data extension lays them out: little-endian, row-major,
    a BYTES element its 4-byte length and its UTF-8 bytes."""
    data = tensor["data"]
    if tensor["datatype"] == "BYTES":
        return b"".join(_LENGTH.pack(len(raw)) + raw for raw in (value.encode("utf-8") for value in data))
    return struct.pack(f"<{len(data)}{_NUMBER_FORMAT[tensor['datatype']]}", *data)
