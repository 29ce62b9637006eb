"""The Open Inference Protocol v2 paths on the app: tensors in, the data plane's scores out, and every
malformed request a 4xx in the protocol's `{"error": "..."}` form (tritonclient's run: tests/integration)."""
from __future__ import annotations

import json
import re
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from service.version import VERSION

HEADER = "Inference-Header-Content-Length"


def _bytes_tensor(values: list[str]) -> bytes:
    return b"".join(struct.pack("<I", len(v.encode())) + v.encode() for v in values)


def _text(name: str, values: list[str]) -> dict:
    return {"name": name, "shape": [len(values)], "datatype": "BYTES", "data": values}


def _infer(client, model: str, body: dict | bytes, headers: dict | None = None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(f"/v2/models/{model}/infer", data=data, headers=headers or {},
                       content_type="application/octet-stream")


def test_infer_scores_as_score_does(client):
    body = {"id": "req-1", "inputs": [_text("context", ["hi\nhow are you?", '["hello", "who is it?"]']),
                                      _text("response", ["fine, thanks", "me"]),
                                      _text("reference", ["good, and you?", "it is me"])]}
    answer = _infer(client, "bleu4", body)
    assert answer.status_code == 200, answer.get_json()
    out = answer.get_json()
    v1 = client.post("/score", json={"model": "bleu4", "items": [
        {"context": ["hi", "how are you?"], "response": "fine, thanks", "reference": "good, and you?"},
        {"context": ["hello", "who is it?"], "response": "me", "reference": "it is me"}]}).get_json()
    assert out["id"] == "req-1" and out["model_name"] == "bleu4" and out["model_version"] == v1["version"]
    assert out["outputs"] == [{"name": "score", "datatype": "FP32", "shape": [2], "data": v1["scores"]},
                              {"name": "warning", "datatype": "BYTES", "shape": [2], "data": ["", ""]}]


def test_binary_tensors_read_as_json_ones(client):
    context, responses = _bytes_tensor(["hi"]), _bytes_tensor(["ok", "très bien\n"])  # its last byte is data
    header = json.dumps({"inputs": [
        {"name": "context", "shape": [1], "datatype": "BYTES", "parameters": {"binary_data_size": len(context)}},
        {"name": "response", "shape": [2], "datatype": "BYTES", "parameters": {"binary_data_size": len(responses)}},
    ]}).encode()
    binary = context + responses
    answer = _infer(client, "length", header + binary, {HEADER: str(len(header))})
    assert answer.status_code == 200, answer.get_json()
    plain = _infer(client, "length", {"inputs": [_text("context", ["hi"]), _text("response", ["ok", "très bien\n"])]})
    assert answer.get_json()["outputs"] == plain.get_json()["outputs"]


def test_a_rerank_gives_index_and_score_best_first(client):
    body = {"parameters": {"rerank": True, "top_k": 2},
            "inputs": [_text("context", ["hi"]), _text("response", ["a", "a much longer reply", "mid reply"])]}
    outputs = {o["name"]: o["data"] for o in _infer(client, "length", body).get_json()["outputs"]}
    assert outputs["index"] == [1, 2] and outputs["score"][0] >= outputs["score"][1]


@pytest.mark.parametrize("body,status,words", [
    ({"inputs": []}, 422, "non-empty `inputs`"),
    ({"inputs": [{"name": "response", "shape": [1], "datatype": "FP32", "data": [1.0]}]}, 422, "BYTES"),
    ({"inputs": [{"name": "response", "shape": [2], "datatype": "BYTES", "data": ["a"]}]}, 422, "shape"),
    ({"inputs": [_text("response", ["a"]), _text("context", ["b"]), _text("mood", ["c"])]}, 422, "Unknown input"),
    ({"inputs": [_text("response", ["a", "b"]), _text("context", ["b", "c", "d"])]}, 422, "elements for 2"),
    ({"inputs": [_text("response", ["a"]), _text("context", ["[1, 2]"])]}, 422, "strings"),
    ({"inputs": [_text("response", ["a"]), _text("context", ["b"])], "parameters": {"options": "{"}}, 422, "options"),
    ({"inputs": [_text("response", ["a"]), _text("context", ["b"])], "outputs": [{"name": "p"}]}, 422, "Unknown output"),
    ({"inputs": [_text("response", ["a"]), _text("context", ["b"])], "outputs": [{"name": "score"}, {"name": "score"}]},
     422, "named twice"),
    ({"parameters": {"rerank": True}, "inputs": [_text("response", ["a"]), _text("context", ["b", "c"])]}, 422, "one"),
    *(({"parameters": {"rerank": flag}, "inputs": [_text("response", ["a"]), _text("context", ["b"])]}, 422,
       "true or false") for flag in ("true", 1, "yes", None)),
    ({"parameters": {"top_k": 1}, "inputs": [_text("response", ["a"]), _text("context", ["b"])]}, 422, "re-ranking"),
    ({"parameters": {"rerank": True}, "inputs": [_text("turns", ['[{"speaker": "a", "text": "b"}]'])]}, 422,
     "whole dialogue"),
    ({"inputs": [_text("turns", ['[{"speaker": "a", "text": "b"}]']), _text("response", ["x"])]}, 422,
     "which read no 'response'"),  # it was dropped unread
    ({"inputs": [{**_text("response", ["a"]), "data": "ab"}, _text("context", ["b"])]}, 422,
     "`data` is an array"),  # a bare string was taken as the one element
    ({"id": 42, "inputs": [_text("response", ["a"]), _text("context", ["b"])]}, 422,
     "`id` is a string"),  # the protocol's answer must echo it; it was dropped
    ({"inputs": [{**_text("response", ["a"]), "shape": []}, _text("context", ["b"])]}, 422, "needs a shape"),
    ({"inputs": [_text("response", ["a"]), _text("response", ["b"]), _text("context", ["b"])]}, 422, "given twice"),
    ({"inputs": [_text("response", ["a", "b", "c"]), _text("context", ["b", "c"])]}, 422, "elements for 3"),
    *(({"inputs": [_text("turns", [turns])]}, 422, "not a JSON array") for turns in ('{"a": 1}', "hello")),
    *(({"inputs": [_text("response", ["a"]), _text("context", ["b"])], "parameters": {"options": options}}, 422,
       "a JSON object in a string") for options in ("", {})),
    ({"inputs": [_text("response", ["a"]), _text("context", ["b"])], "parameters": [1]}, 422, "must be an object"),
    ({"inputs": [_text("response", ["a"]), _text("context", ["[]"])]}, 422, "(inputs.context.0: "),  # no turns
    ({"parameters": {"rerank": True}, "inputs": [_text("response", ["a"]), _text("context", ["b"]),
                                                 _text("reference", ["c", "d"])]}, 422, "at most one"),
    ({"parameters": {"rerank": True}, "inputs": [_text("response", ["a"]), _text("context", ["b"]),
                                                 _text("mood", ["c"])]}, 422, "Unknown input"),
    ({"inputs": [{**_text("response", ["a"]), "data": [1]}, _text("context", ["b"])]}, 422, "elements are strings"),
    ({"inputs": [{"shape": [1], "datatype": "BYTES", "data": ["a"]}]}, 422, "with a `name`"),
])
def test_malformed_requests_are_4xx_in_the_protocols_form(client, body, status, words):
    answer = _infer(client, "length", body)
    assert answer.status_code == status
    assert list(answer.get_json()) == ["error"] and words in answer.get_json()["error"]


@pytest.mark.parametrize("header,binary", [("x", b""), ("99999", b""), ("", b""), ("\u00b2", b"")])
def test_a_bad_binary_header_is_400(client, header, binary):
    body = json.dumps({"inputs": [_text("response", ["a"]), _text("context", ["b"])]}).encode()
    answer = _infer(client, "length", body + binary, {HEADER: header or "-1"})
    assert answer.status_code == 400 and "error" in answer.get_json()


def test_a_binary_header_of_zero_bytes_says_so(client):
    body = json.dumps({"inputs": [_text("response", ["a"]), _text("context", ["b"])]}).encode()
    answer = _infer(client, "length", body, {HEADER: "0"})
    assert answer.status_code == 400 and f"{HEADER} is 0" in answer.get_json()["error"]  # not "the body is empty"


@pytest.mark.parametrize("off_by", [2, -2])
def test_a_binary_header_that_cuts_the_json_elsewhere_is_named(client, off_by):
    """Two bytes too many were answered "the body holds NUL bytes: it is UTF-16", too few "Unterminated string"."""
    context = _bytes_tensor(["hi"])
    header = json.dumps({"inputs": [
        {"name": "context", "shape": [1], "datatype": "BYTES", "parameters": {"binary_data_size": len(context)}},
        _text("response", ["ok"])]}).encode()
    answer = _infer(client, "length", header + context, {HEADER: str(len(header) + off_by)})
    error = answer.get_json()["error"]
    assert answer.status_code == 400 and error.startswith(f"The first {len(header) + off_by} bytes ({HEADER})"), error


def test_binary_data_that_runs_past_its_size_is_400(client):
    header = json.dumps({"inputs": [
        {"name": "context", "shape": [1], "datatype": "BYTES", "parameters": {"binary_data_size": 4}},
        {"name": "response", "shape": [1], "datatype": "BYTES", "data": ["a"]}]}).encode()
    answer = _infer(client, "length", header + struct.pack("<I", 50), {HEADER: str(len(header))})
    assert answer.status_code == 400 and "runs past" in answer.get_json()["error"]


def test_a_binary_header_the_length_of_the_whole_body_reads_it_as_json(client):
    body = json.dumps({"inputs": [_text("response", ["a"]), _text("context", ["b"])]}).encode()
    answer = _infer(client, "length", body, {HEADER: str(len(body))})
    assert answer.status_code == 200, answer.get_json()


def test_binary_data_no_input_claims_is_400(client):
    header = json.dumps({"inputs": [_text("response", ["a"]), _text("context", ["b"])]}).encode()
    answer = _infer(client, "length", header + _bytes_tensor(["x"]), {HEADER: str(len(header))})
    assert answer.status_code == 400 and "no input claims" in answer.get_json()["error"]


@pytest.mark.parametrize("size", [-1, True])
def test_a_binary_data_size_not_a_count_of_bytes_is_named(client, size):
    header = json.dumps({"inputs": [
        {"name": "context", "shape": [1], "datatype": "BYTES", "parameters": {"binary_data_size": size}},
        _text("response", ["a"])]}).encode()
    answer = _infer(client, "length", header + _bytes_tensor(["b"]), {HEADER: str(len(header))})
    assert answer.status_code == 400 and "binary_data_size does not fit" in answer.get_json()["error"]


def test_a_binary_element_not_utf8_is_422(client):
    context = struct.pack("<I", 2) + b"\xff\xfe"
    header = json.dumps({"inputs": [
        {"name": "context", "shape": [1], "datatype": "BYTES", "parameters": {"binary_data_size": len(context)}},
        _text("response", ["a"])]}).encode()
    answer = _infer(client, "length", header + context, {HEADER: str(len(header))})
    assert answer.status_code == 422 and "not UTF-8" in answer.get_json()["error"]


def test_input_parameters_that_are_not_an_object_are_ignored(client):
    body = {"inputs": [{**_text("response", ["a"]), "parameters": [1]}, _text("context", ["b"])]}
    assert _infer(client, "length", body).status_code == 200


def test_metadata_health_and_versions(client):
    assert client.get("/v2").get_json()["name"] == "dialscore"
    assert client.get("/v2").get_json()["version"] == VERSION  # the tool's, which `dialscore --version` prints
    assert client.get("/v2").get_json()["extensions"] == ["binary_tensor_data"]  # as Triton names it, both ways
    assert client.get("/v2/health/live").status_code == 200
    assert client.get("/v2/health/ready").get_json() == {"ready": True}
    metadata = client.get("/v2/models/bleu4").get_json()
    assert [i["name"] for i in metadata["inputs"]] == ["context", "response", "reference"]
    version = metadata["versions"][0]
    assert client.get(f"/v2/models/bleu4/versions/{version}/ready").get_json() == {"name": "bleu4", "ready": True}
    missing = client.get("/v2/models/bleu4/versions/0.0.0")
    assert missing.status_code == 404 and version in missing.get_json()["error"]
    assert client.get("/v2/models/nope/ready").status_code == 404


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
                        ["inputs", "name", "shape", "datatype", "data", "parameters", "outputs", "rerank",
                         "binary_data_size", "options", "top_k"]), inner, max_size=4), max_leaves=12))
def test_no_request_body_is_a_500(client, body):
    answer = _infer(client, "length", {"inputs": body} if not isinstance(body, dict) else body)
    assert answer.status_code < 500, answer.get_json()


_DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize("inputs,parameters,status,words", [
    ([_text("context", ['["hi \\ud800"]']), _text("response", ["a"])], {}, 422, "JSON (at 0): Contains a lone"),
    ([_text("context", ['["hi \\ud800"]']), _text("response", ["a", "b"])], {"rerank": True}, 422, "surrogate"),
    ([_text("turns", ['[{"speaker": "bot", "text": "hi \\udc00"}]'])], {}, 422, "surrogate"),
    ([_text("context", [_DEEP]), _text("response", ["a"])], {}, 413, "deeper"),
    ([_text("turns", [_DEEP])], {}, 413, "deeper"),
    ([_text("context", ["b"]), _text("response", ["a"])], {"options": "[" * 5000}, 413, "deeper"),
    ([_text("context", ["b"]), _text("response", ["a"])], {"options": '{"signals": false, "signals": true}'}, 422,
     "ambiguous"),
    ([_text("turns", ['[{"speaker": "bot", "speaker": "user", "text": "x"}]'])], {}, 422, "ambiguous"),
    ([_text("context", ["b"]), _text("response", ["a"])], {"options": '{"x": NaN}'}, 422, "NaN"),
    ([_text("context", ["b"]), _text("response", ["a"])], {"options": '{"x": 1e400}'}, 422, "too large for a double"),
])
def test_json_in_a_string_is_held_to_the_bodys_rules(client, inputs, parameters, status, words):
    answer = _infer(client, "length", {"inputs": inputs, "parameters": parameters})
    assert answer.status_code == status, answer.get_json()
    assert list(answer.get_json()) == ["error"] and words in answer.get_json()["error"]


def test_a_lone_surrogate_in_an_options_key_is_not_echoed(client):
    body = {"inputs": [_text("context", ["b"]), _text("response", ["a"])], "parameters": {"options": '{"\\ud800": 1}'}}
    answer = _infer(client, "length", body)
    assert answer.status_code == 422
    error = answer.get_json()["error"]
    assert "\ud800" not in error and "\\ud800" in error


@pytest.mark.parametrize("context,turns", [
    ("[laughs] that is funny", ["[laughs] that is funny"]),
    ("[laughs]\nwhat next?", ["[laughs]", "what next?"]),
    ("[1] is my pick", ["[1] is my pick"]),
    ('["hello", "who is it?"]', ["hello", "who is it?"]),
])
def test_a_context_is_a_json_array_only_where_it_parses_as_one(client, context, turns):
    body = {"inputs": [_text("context", [context]), _text("response", ["ha"]), _text("reference", ["so funny"])]}
    answer = _infer(client, "bleu4", body)
    assert answer.status_code == 200, answer.get_json()
    v1 = client.post("/score", json={"model": "bleu4", "items": [
        {"context": turns, "response": "ha", "reference": "so funny"}]}).get_json()
    assert answer.get_json()["outputs"][0]["data"] == v1["scores"]


@pytest.mark.parametrize("context,turns", [
    ("how was your day?\n", ["how was your day?"]),  # a final newline ends the last turn
    ("hi\r\nhow was your day?\r\n", ["hi", "how was your day?"]),
    ("hi\n\nhow was your day?", ["hi", "", "how was your day?"]),  # a blank turn inside stays
    ("hi\n\n", ["hi", ""]),
    ("", [""]),
    ("[laughs]\nwhat next?\n", ["[laughs]", "what next?"]),
    ('["hello\\n"]', ["hello\n"]),  # an array's turns are as sent
    (' ["hello", "who?"]\n', ["hello", "who?"]),  # the whole text parses as an array
])
def test_context_lines_end_at_lf_or_crlf_and_a_final_newline_adds_no_turn(client, context, turns):
    from service.api.inference_v2 import context_turns

    with client.application.app_context():  # an array is held to the app's JSON limits
        assert context_turns(context, 0) == turns


@pytest.mark.parametrize("context", ["[1, 2]", '["a", {"b": 1}]', "[null]"])
def test_a_context_array_of_other_things_than_strings_is_422(client, context):
    answer = _infer(client, "length", {"inputs": [_text("context", [context]), _text("response", ["a"])]})
    assert answer.status_code == 422 and "array of strings" in answer.get_json()["error"]


def test_errors_name_the_v2_inputs_and_read_as_sentences(client):
    """Details keyed by the v2 request's names (not the v1 body's `items.1.response`), lists joined, not repr'd."""
    over = _infer(client, "bleu4", {"inputs": [_text("context", ["a"]), _text("response", ["a", "x" * 20000]),
                                               _text("reference", ["b", "c"])]})
    assert over.status_code == 413 and "(inputs.response.1: 20000 characters" in over.get_json()["error"]
    missing = _infer(client, "bleu4", {"inputs": [_text("context", ["a"]), _text("response", ["a", "b"]),
                                                  _text("reference", ["b", " "])]})
    assert "(inputs.reference.1: Required" in missing.get_json()["error"]
    ranked = _infer(client, "bleu4", {"parameters": {"rerank": True, "options": '{"x": 1}'},
                                      "inputs": [_text("context", ["a"]), _text("response", ["a", "b"])]})
    assert "(parameters.options.x: Unknown option" in ranked.get_json()["error"]
    wrong = client.get("/v2/models/bleu4/infer")
    assert wrong.status_code == 405 and wrong.get_json()["error"].endswith("(allowed: OPTIONS, POST)")
    unknown = client.get("/v2/models/nope").get_json()["error"]
    assert "['" not in unknown and "served: bleu4, " in unknown


_LONG_TURN = '["a", "' + "x" * 20000 + '"]'


@pytest.mark.parametrize("parameters,inputs,field", [
    ({}, [_text("context", [_LONG_TURN]), _text("response", ["a"])], "inputs.context.0.1"),
    ({"rerank": True}, [_text("context", [_LONG_TURN]), _text("response", ["a"])], "inputs.context.0.1"),
    ({}, [_text("context", ["b"]), _text("response", ["a"] * 513)], "inputs"),
    ({"rerank": True, "top_k": 0}, [_text("context", ["b"]), _text("response", ["a"])], "parameters.top_k"),
])
def test_an_error_names_the_field_as_the_infer_request_does(client, parameters, inputs, field):
    answer = _infer(client, "length", {"inputs": inputs, "parameters": parameters})
    assert answer.status_code in (413, 422) and f"({field}: " in answer.get_json()["error"], answer.get_json()


@pytest.mark.parametrize("inputs,fields", [
    ([_text("context", [_LONG_TURN]), _text("response", ["a", "b"])], ["inputs.context.0.1"]),
    ([_text("context", ["[]"]), _text("response", ["a", "b"])], ["inputs.context.0"]),
    ([_text("context", ["b"]), _text("response", ["a", "b"]), _text("reference", [" "])], ["inputs.reference.0"]),
])
def test_an_error_in_one_element_for_every_item_names_that_element(client, inputs, fields):
    """It named `inputs.context.1.1` too, an element the request does not have (the one served each item)."""
    answer = _infer(client, "bleu4", {"inputs": inputs})
    assert answer.status_code in (413, 422)
    assert re.findall(r"(inputs\.[a-z0-9.]+):", answer.get_json()["error"]) == fields, answer.get_json()


def test_outputs_come_as_requested_and_all_for_an_empty_list(client):
    tensors = [_text("context", ["b"]), _text("response", ["a"])]
    named = _infer(client, "length", {"inputs": tensors, "outputs": [{"name": "warning"}, {"name": "score"}]})
    assert [o["name"] for o in named.get_json()["outputs"]] == ["warning", "score"]
    every = _infer(client, "length", {"inputs": tensors, "outputs": []})
    assert [o["name"] for o in every.get_json()["outputs"]] == ["score", "warning"]


def test_an_infer_at_another_version_is_404(client):  # a non-string id: the malformed requests above
    body = {"id": "r", "inputs": [_text("context", ["b"]), _text("response", ["a"])]}
    wrong = client.post("/v2/models/length/versions/0.0.0/infer", data=json.dumps(body))
    assert wrong.status_code == 404 and "not 0.0.0" in wrong.get_json()["error"]


def test_a_rerank_that_excludes_every_candidate_gives_empty_outputs(client):
    body = {"parameters": {"rerank": True, "exclude_warned": "empty"},
            "inputs": [_text("context", ["b"]), _text("response", ["", ""])]}
    answer = _infer(client, "length", body)
    assert answer.status_code == 200, answer.get_json()
    assert {o["name"]: o["data"] for o in answer.get_json()["outputs"]} == {"index": [], "score": [], "warning": []}


@pytest.mark.parametrize("outputs", ["score", ["score"], [{"name": 1}], "", {}, 0, False])
def test_outputs_that_are_not_named_objects_are_422_saying_so(client, outputs):
    body = {"inputs": [_text("context", ["b"]), _text("response", ["a"])], "outputs": outputs}
    answer = _infer(client, "length", body)
    assert answer.status_code == 422 and "None" not in answer.get_json()["error"]
    assert "`outputs` is a list of objects" in answer.get_json()["error"]


@pytest.mark.parametrize("name", ["..", "v1.", "."])
def test_a_model_name_ending_in_a_dot_is_named_whole_in_the_error(client, name):
    """A message's full stop is dropped inside the v2 error's parentheses; a name's own dot was too."""
    answer = client.get(f"/v2/models/{name.replace('.', '%2e')}")
    assert answer.status_code == 404 and f"(model: {name};" in answer.get_json()["error"], answer.get_json()


def test_a_calibrated_model_gives_human_percentile_as_an_output_as_v1_does(full_app):
    """A bot wired through KServe could not threshold: the infer answer gave index and score only."""
    client = full_app.test_client()
    context, replies = ["how was your weekend?"], ["great, i went hiking!", "ok", "weekend your was how"]
    metadata = client.get("/v2/models/unref-minilm-commercial").get_json()
    assert [o["name"] for o in metadata["outputs"]] == ["score", "human_percentile", "warning"]
    assert [o["name"] for o in client.get("/v2/models/bleu4").get_json()["outputs"]] == ["score", "warning"]
    tensors = [_text("context", ["\n".join(context)]), _text("response", replies)]
    scored = {o["name"]: o["data"] for o in _infer(client, "unref-minilm-commercial", {"inputs": tensors}).get_json()[
        "outputs"]}
    v1 = client.post("/score", json={"model": "unref-minilm-commercial", "items": [
        {"context": context, "response": r} for r in replies]}).get_json()
    assert scored["human_percentile"] == pytest.approx(v1["human_percentile"], abs=1e-6)
    ranked = _infer(client, "unref-minilm-commercial", {"inputs": tensors, "parameters": {"rerank": True}}).get_json()
    outputs = {o["name"]: o["data"] for o in ranked["outputs"]}
    v1_ranking = client.post("/rerank", json={"model": "unref-minilm-commercial", "context": context,
                                              "candidates": replies}).get_json()["ranking"]
    assert outputs["index"] == [e["index"] for e in v1_ranking]
    assert outputs["human_percentile"] == pytest.approx([e["human_percentile"] for e in v1_ranking], abs=1e-6)
    only = {"inputs": tensors, "outputs": [{"name": "human_percentile"}]}
    assert [o["name"] for o in _infer(client, "unref-minilm-commercial", only).get_json()["outputs"]] == [
        "human_percentile"]


def test_a_rerank_reads_its_reference_and_a_dialogue_model_takes_turns(client, full_app):
    tensors = [_text("context", ["hi"]), _text("response", ["good, and you?", "no"]), _text("reference", ["good"])]
    ranked = _infer(client, "bleu4", {"inputs": tensors, "parameters": {"rerank": True}}).get_json()["outputs"]
    v1 = client.post("/rerank", json={"model": "bleu4", "context": ["hi"], "candidates": ["good, and you?", "no"],
                                      "reference": "good"}).get_json()["ranking"]
    assert {o["name"]: o["data"] for o in ranked}["score"] == pytest.approx([e["score"] for e in v1])
    metadata = full_app.test_client().get("/v2/models/mh").get_json()
    assert [i["name"] for i in metadata["inputs"]] == ["turns"]


def test_a_v2_strings_repeated_key_says_where_inside_it(client):
    turns = '[{"speaker": "bot", "speaker": "user", "text": "x"}]'
    answer = _infer(client, "length", {"inputs": [_text("turns", [turns])]})
    assert answer.status_code == 422 and "(at 0.speaker)" in answer.get_json()["error"], answer.get_json()


def test_warnings_are_a_bytes_output_and_a_rerank_can_exclude_the_warned(client):
    """An infer dropped v1's `warnings`: a platform's bot got a blank reply ranked first with no word of it,
    and could not leave such replies out as /rerank's `exclude_warned` does."""
    replies = ["fine, thanks", "", "🙂🙂", "хорошо, спасибо большое, а у тебя как дела?"]
    tensors = [_text("context", ["how are you?"]), _text("response", replies)]
    v1 = client.post("/score", json={"model": "length", "items": [
        {"context": ["how are you?"], "response": r} for r in replies]}).get_json()
    expected = {w["index"]: w["code"] for w in v1["warnings"]}
    assert sorted(expected.values()) == ["empty", "no_words", "not_english"]
    scored = {o["name"]: o for o in _infer(client, "length", {"inputs": tensors}).get_json()["outputs"]}
    assert scored["warning"] == {"name": "warning", "datatype": "BYTES", "shape": [4],
                                 "data": [expected.get(i, "") for i in range(4)]}
    rerank = {"inputs": tensors, "parameters": {"rerank": True}}
    ranked = {o["name"]: o["data"] for o in _infer(client, "length", rerank).get_json()["outputs"]}
    assert ranked["warning"] == [expected.get(i, "") for i in ranked["index"]]
    rerank["parameters"]["exclude_warned"] = "empty, no_words"
    kept = {o["name"]: o["data"] for o in _infer(client, "length", rerank).get_json()["outputs"]}
    v1_kept = client.post("/rerank", json={"model": "length", "context": ["how are you?"], "candidates": replies,
                                           "exclude_warned": ["empty", "no_words"]}).get_json()["ranking"]
    assert kept["index"] == [e["index"] for e in v1_kept] and sorted(kept["index"]) == [0, 3]
    assert kept["warning"] == ["not_english" if i == 3 else "" for i in kept["index"]]


@pytest.mark.parametrize(("parameters", "field"), [
    ({"rerank": True, "exclude_warned": "empty,blank"}, "parameters.exclude_warned.1"),
    ({"rerank": True, "exclude_warned": ["empty"]}, "parameters.exclude_warned"),
    ({"exclude_warned": "empty"}, "parameters.exclude_warned"),
    ({"rerank": True, "exclude_warned": None}, "parameters.exclude_warned"),
])
def test_a_bad_exclude_warned_is_422_naming_the_parameter(client, parameters, field):
    body = {"inputs": [_text("context", ["hi"]), _text("response", ["a", ""])], "parameters": parameters}
    answer = _infer(client, "length", body)
    assert answer.status_code == 422 and f"({field}:" in answer.get_json()["error"], answer.get_json()


def _split_answer(answer) -> tuple[dict, bytes]:
    """An infer answer with binary outputs: its JSON (Inference-Header-Content-Length bytes), then the data."""
    raw, size = answer.get_data(), int(answer.headers[HEADER])
    return json.loads(raw[:size]), raw[size:]


def test_outputs_asked_for_as_binary_data_follow_the_json(client):
    """tritonclient asks for binary outputs by default (`binary_data_output`, or `binary_data` on an output);
    answered in JSON, its reader gave a BYTES output's elements as str where Triton's give bytes, so a
    client's `warning == b"empty"` never held."""
    tensors = [_text("context", ["hi"]), _text("response", ["ok", "", "a fine reply"])]
    plain = {o["name"]: o for o in _infer(client, "length", {"inputs": tensors,
                                                             "parameters": {"rerank": True}}).get_json()["outputs"]}
    body = {"inputs": tensors, "parameters": {"rerank": True, "binary_data_output": True},
            "outputs": [{"name": "index"}, {"name": "score", "parameters": {"binary_data": False}}, {"name": "warning"}]}
    answer = _infer(client, "length", body)
    assert answer.status_code == 200 and answer.mimetype == "application/octet-stream"
    head, tail = _split_answer(answer)
    index, score, warning = head["outputs"]
    assert score == plain["score"]  # an output's own `binary_data: false` overrides the request's
    assert index == {"name": "index", "datatype": "INT64", "shape": [3], "parameters": {"binary_data_size": 24}}
    assert warning["parameters"] == {"binary_data_size": len(tail) - 24}
    assert tail == struct.pack("<3q", *plain["index"]["data"]) + _bytes_tensor(plain["warning"]["data"])
    scored = _infer(client, "length", {"inputs": tensors, "outputs": [{"name": "score",
                                                                       "parameters": {"binary_data": True}}]})
    head, tail = _split_answer(scored)
    assert head["outputs"] == [{"name": "score", "datatype": "FP32", "shape": [3],
                                "parameters": {"binary_data_size": 12}}]
    assert list(struct.unpack("<3f", tail)) == [1.0, 0.0, 3.0]
