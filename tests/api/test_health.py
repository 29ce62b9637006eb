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


def test_metrics_count_requests_and_errors(client):
    client.post("/score", json={"model": "length", "items": [{"context": ["a"], "response": "b c"}]})
    client.post("/score", data=b"[", content_type="application/json")
    text = client.get("/metrics").get_data(as_text=True)
    assert 'dialscore_requests_total{endpoint="/score",method="POST",status="200"}' in text
    assert 'dialscore_errors_total{code="bad_json"}' in text
    assert 'dialscore_items_scored_total{model="length"}' in text
    assert "dialscore_request_seconds_bucket" in text


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
