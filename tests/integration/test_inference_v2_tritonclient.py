"""The Open Inference Protocol v2 through tritonclient's HTTP client (a client no one here wrote) against
a live gunicorn: health, metadata, infer (JSON and binary tensors), a re-ranking, and scores equal to /score's."""
from __future__ import annotations

import http.client
import json

import numpy as np
import pytest

from tests.conftest import copy_store
from tests.live_server import running_server

httpclient = pytest.importorskip("tritonclient.http", reason="tritonclient[http] is a dev requirement")
from tritonclient.utils import InferenceServerException  # noqa: E402

TOKEN = "v2-token"
CONTEXTS = [["hey, what do you want to do tonight?", "why don't we go see a movie?"], ["how was your weekend?"]]
RESPONSES = ["sure, the film about turing looks great!", "i don't know."]
REFERENCES = ["yes, i would love to see the new one about turing.", "great, i went hiking with my sister!"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    store = copy_store(tmp_path_factory.mktemp("v2") / "model_store", ("autojudge-minilm", "bleu4", "length"))
    with running_server(store, {"DIALSCORE_API_TOKEN": TOKEN}, workers=1) as srv:
        yield srv


@pytest.fixture()
def client(server):
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    yield client
    client.close()


def auth() -> dict[str, str]:
    """A new dict each call: tritonclient adds its own headers to the dict it is given."""
    return {"Authorization": f"Bearer {TOKEN}"}


def _v1_scores(server, model: str, with_reference: bool) -> list[float]:
    items = [{"context": c, "response": r, **({"reference": f} if with_reference else {})}
             for c, r, f in zip(CONTEXTS, RESPONSES, REFERENCES)]
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("POST", "/score", json.dumps({"model": model, "items": items}),
                 {"Content-Type": "application/json", **auth()})
    answer = json.loads(conn.getresponse().read())
    conn.close()
    return answer["scores"]


def _text(name: str, values: list[str], binary: bool) -> "httpclient.InferInput":
    tensor = httpclient.InferInput(name, [len(values)], "BYTES")
    tensor.set_data_from_numpy(np.array([v.encode() for v in values], dtype=np.object_), binary_data=binary)
    return tensor


def test_health_and_server_metadata_need_no_token_for_the_probes(client):
    assert client.is_server_live()
    assert client.is_server_ready()
    assert client.get_server_metadata(headers=auth())["name"] == "dialscore"


def test_model_metadata_names_the_inputs_and_the_score(client):
    metadata = client.get_model_metadata("bleu4", headers=auth())
    assert [i["name"] for i in metadata["inputs"]] == ["context", "response", "reference"]
    assert all(i["datatype"] == "BYTES" for i in metadata["inputs"])
    assert metadata["outputs"] == [{"name": "score", "datatype": "FP32", "shape": [-1]},
                                   {"name": "warning", "datatype": "BYTES", "shape": [-1]}]
    assert client.is_model_ready("autojudge-minilm", headers=auth())
    assert not client.get_model_metadata("autojudge-minilm", headers=auth())["inputs"][-1]["name"] == "reference"


@pytest.mark.parametrize("binary", [True, False], ids=["binary-tensors", "json-tensors"])
@pytest.mark.parametrize("model,with_reference", [("autojudge-minilm", False), ("bleu4", True)])
def test_infer_gives_the_scores_of_score(server, client, model, with_reference, binary):
    inputs = [_text("context", [json.dumps(c) for c in CONTEXTS], binary), _text("response", RESPONSES, binary)]
    if with_reference:
        inputs.append(_text("reference", REFERENCES, binary))
    result = client.infer(model, inputs, headers=auth())
    scores = result.as_numpy("score")
    assert scores.dtype == np.float32 and scores.shape == (2,)
    np.testing.assert_allclose(scores, np.array(_v1_scores(server, model, with_reference), dtype=np.float32))
    assert result.get_response()["model_version"]


def test_a_rerank_through_infer_puts_the_best_first(server, client):
    candidates = ["i don't know.", "great, i went hiking with my sister!", "how was your weekend?"]
    result = client.infer("autojudge-minilm", [_text("context", ["how was your weekend?"], True),
                                               _text("response", candidates, True)],
                          parameters={"rerank": True, "top_k": 2}, headers=auth())
    index, score = result.as_numpy("index"), result.as_numpy("score")
    assert index.shape == score.shape == (2,) and score[0] >= score[1]
    v1 = _v1_scores_of(server, candidates)
    assert list(index) == sorted(range(3), key=lambda i: -v1[i])[:2]


def test_a_rerank_reads_the_warnings_and_leaves_the_warned_out_as_asked(client):
    candidates = ["great, i went hiking!", "", "🙂"]
    inputs = [_text("context", ["how was your weekend?"], True), _text("response", candidates, True)]
    result = client.infer("autojudge-minilm", inputs, parameters={"rerank": True}, headers=auth())
    warned = dict(zip(result.as_numpy("index"), result.as_numpy("warning")))
    assert warned == {0: b"", 1: b"empty", 2: b"no_words"}  # binary outputs (tritonclient's default): bytes
    kept = client.infer("autojudge-minilm", inputs, parameters={"rerank": True, "exclude_warned": "empty,no_words"},
                        headers=auth())
    assert list(kept.as_numpy("index")) == [0] and list(kept.as_numpy("warning")) == [b""]


@pytest.mark.parametrize("binary", [True, False], ids=["binary-outputs", "json-outputs"])
def test_outputs_asked_for_read_as_tritons_do(client, binary):
    """Each output read as Triton's would be: a BYTES element bytes when asked for as binary data (str in
    JSON), INT64 and FP32 alike both ways."""
    inputs = [_text("context", ["how was your weekend?"], True), _text("response", ["great, i went hiking!", ""], True)]
    outputs = [httpclient.InferRequestedOutput(name, binary_data=binary) for name in ("index", "score", "warning")]
    result = client.infer("autojudge-minilm", inputs, outputs=outputs, parameters={"rerank": True}, headers=auth())
    plain = client.infer("autojudge-minilm", inputs, outputs=[httpclient.InferRequestedOutput(n, binary_data=False)
                                                              for n in ("index", "score")],
                         parameters={"rerank": True}, headers=auth())
    assert result.as_numpy("index").dtype == np.int64 and list(result.as_numpy("index")) == [0, 1]
    assert result.as_numpy("score").dtype == np.float32
    assert list(result.as_numpy("score")) == list(plain.as_numpy("score"))
    assert list(result.as_numpy("warning")) == ([b"", b"empty"] if binary else ["", "empty"])


def _v1_scores_of(server, candidates: list[str]) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("POST", "/rerank", json.dumps({"model": "autojudge-minilm", "context": ["how was your weekend?"],
                                                "candidates": candidates}),
                 {"Content-Type": "application/json", **auth()})
    ranking = json.loads(conn.getresponse().read())["ranking"]
    conn.close()
    return [next(e["score"] for e in ranking if e["index"] == i) for i in range(len(candidates))]


def test_errors_take_the_protocols_form(client):
    with pytest.raises(InferenceServerException, match="needs the header"):
        client.infer("length", [_text("context", ["hi"], True), _text("response", ["a"], True)])  # no token
    with pytest.raises(InferenceServerException, match="No model named"):
        client.get_model_metadata("no-such-model", headers=auth())
    with pytest.raises(InferenceServerException, match="reference"):
        client.infer("bleu4", [_text("context", ["hi"], False), _text("response", ["a"], False)], headers=auth())
