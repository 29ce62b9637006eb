"""Probes, discovery, metrics and the OpenAPI document."""
from tests.conftest import BASELINES


def test_healthz_and_readyz(client):
    assert client.get("/healthz").get_json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.get_json()["status"] == "ready"
    assert set(ready.get_json()["models"]) == set(BASELINES)


def test_models_lists_everything_the_contract_names(client):
    body = client.get("/models").get_json()
    assert set(body["limits"]) >= {"max_body_bytes", "max_items", "max_candidates", "max_turns", "max_chars"}
    for model in body["models"]:
        assert {"name", "version", "kind", "requires", "score_range", "sha256", "providers", "card"} <= set(model)
        assert model["kind"] in ("referenced", "unreferenced", "dialogue")
        assert model["providers"] == ["CPUExecutionProvider"]
        assert len(model["sha256"]) == 64
        assert ("reference" in model["requires"]) == (model["kind"] == "referenced")


def test_models_say_which_component_files_run_where(full_app):
    """A GPU pod serves the fp32 encoder and a CPU pod the int8 one; their scores differ slightly."""
    models = {m["name"]: m for m in full_app.test_client().get("/models").get_json()["models"]}
    (encoder,) = models["adem-minilm"]["components"]
    assert encoder["name"] == "minilm-l6" and encoder["providers"] == ["CPUExecutionProvider"]
    assert (encoder["precision"], encoder["file"]) == ("int8", "encoder-int8.onnx")
    assert models["ruber"]["components"][0]["name"] == "glove-50d"
    assert "precision" not in models["ruber"]["components"][0]
    assert models["bleu4"]["components"] == []
    assert all([c["name"] for c in m["components"]] == m["uses"] for m in models.values())


def test_metrics_count_requests_and_errors(client):
    client.post("/score", json={"model": "length", "items": [{"context": ["a"], "response": "b c"}]})
    client.post("/score", data=b"[", content_type="application/json")
    text = client.get("/metrics").get_data(as_text=True)
    assert 'dialscore_requests_total{endpoint="/score",method="POST",status="200"}' in text
    assert 'dialscore_errors_total{code="bad_json"}' in text
    assert 'dialscore_items_scored_total{model="length"}' in text
    assert "dialscore_request_seconds_bucket" in text


def test_unknown_model_names_do_not_become_metric_labels(client):
    for name in ("attacker-1", "attacker-2"):
        assert client.post("/score", json={"model": name, "items": [{"context": ["a"], "response": "b"}]}
                           ).status_code == 404
    response = client.get("/metrics")
    assert response.status_code == 200
    assert "attacker" not in response.get_data(as_text=True)


def test_responses_match_the_schemas_the_openapi_document_declares(client):
    """Every 200 body loads through its documented schema, which refuses unknown fields: the
    document describes what the service sends, field for field."""
    from service import schemas

    item = {"context": ["hi there"], "response": "hello!", "reference": "hey"}
    human = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    a, b = [1, 3, 2, 4, 5, 7, 6, 8, 9, 10], [2, 1, 3, 5, 4, 6, 8, 7, 10, 9]
    ratings = [{"rater": r, "system": s, "item": f"{r}{s}{i}", "scores": {"fun": v + i, "robotic": 100 - v}}
               for r, bias in (("w1", 0), ("w2", 5), ("w3", 0)) for s, v in (("A", 60 + bias), ("B", 40 + bias),
                                                                           ("degraded", 10 if bias else 50))
               for i in range(4)]
    cases = [
        ("GET", "/healthz", None, schemas.StatusSchema),
        ("GET", "/readyz", None, schemas.StatusSchema),
        ("GET", "/models", None, schemas.ModelsResponseSchema),
        ("POST", "/score", {"model": "bleu4", "items": [item]}, schemas.ScoreResponseSchema),
        ("POST", "/score", {"models": ["bleu4", "length"], "items": [item]}, schemas.MultiScoreResponseSchema),
        ("POST", "/rerank", {"model": "length", "context": ["hi"], "candidates": ["a", "b c"]},
         schemas.RerankResponseSchema),
        ("POST", "/correlate", {"human": human, "scores": {"a": a, "b": b}, "systems": list("xyzxyzxyzx"),
                                "resamples": 50}, schemas.CorrelateResponseSchema),
        ("POST", "/correlate", {"human": [[h, h + 1] for h in human], "scores": {"a": a, "flat": [1] * 10},
                                "resamples": 0}, schemas.CorrelateResponseSchema),
        ("POST", "/human-eval", {"ratings": ratings, "reverse": ["robotic"], "qc_system": "degraded"},
         schemas.HumanEvalResponseSchema),
    ]
    for method, path, body, schema in cases:
        response = client.open(path, method=method, json=body)
        assert response.status_code == 200, (path, response.get_json())
        schema().load(response.get_json())  # raises on a missing, extra or mistyped field


def test_openapi_describes_every_endpoint_and_validates(client):
    from openapi_spec_validator import validate

    document = client.get("/openapi.json").get_json()
    validate(document)
    assert set(document["paths"]) == {"/healthz", "/readyz", "/models", "/metrics", "/openapi.json", "/score",
                                      "/rerank", "/correlate", "/human-eval"}
    for path in ("/score", "/rerank", "/correlate", "/human-eval"):
        operation = document["paths"][path]["post"]
        assert operation["requestBody"]["content"]["application/json"]["example"]
        assert {"200", "422"} <= set(operation["responses"])
    item = document["components"]["schemas"]["Item"]
    assert set(item["required"]) == {"context", "response"}


def test_the_readme_example_bodies_give_full_results(client):
    """docs/examples/*.json, which README's curl lines send: intervals, system level, a ranking."""
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "docs" / "examples"
    body = client.post("/correlate", data=(examples / "correlate.json").read_bytes(),
                       content_type="application/json").get_json()
    assert body["metrics"]["m1"]["item"]["pearson"]["ci"] is not None
    assert body["metrics"]["m1"]["system"]["pearson"]["r"] is not None
    assert any(c["test"] == "williams" and c["p"] is not None for c in body["comparisons"])
    body = client.post("/human-eval", data=(examples / "human-eval.json").read_bytes(),
                       content_type="application/json").get_json()
    assert body["raters"]["failed"] == [] and [s["system"] for s in body["systems"]] == ["A", "B"]
    assert body["significance"]["A"]["B"] < 0.05
