"""Probes, discovery, metrics and the OpenAPI document."""
import os
import re
from pathlib import Path

from tests.conftest import BASELINES, metric_sample


def test_healthz_and_readyz(client):
    assert client.get("/healthz").get_json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.get_json()["status"] == "ready"
    assert set(ready.get_json()["models"]) == set(BASELINES)


def test_models_lists_everything_the_contract_names(client):
    body = client.get("/models").get_json()
    assert set(body["limits"]) >= {"max_body_bytes", "max_items", "max_candidates", "max_turns", "max_dialogue_turns",
                                   "max_chars"}
    for model in body["models"]:
        assert {"name", "version", "kind", "requires", "score_range", "sha256", "providers", "card"} <= set(model)
        assert model["kind"] in ("referenced", "unreferenced", "dialogue")
        assert model["providers"] == ["CPUExecutionProvider"]
        assert len(model["sha256"]) == 64
        assert ("reference" in model["requires"]) == (model["kind"] == "referenced")


def test_models_list_every_served_models_terms(full_app):
    """Every served model's `license` and `commercial_use`, as a live app lists them: the untrained baselines on
    permissive pieces may be used commercially; every model trained on DailyDialog, xDial-Eval or data whose
    licence is unstated may not."""
    listed = {m["name"]: (m["license"], m["commercial_use"]) for m in
              full_app.test_client().get("/models").get_json()["models"]}
    commercial = {name for name, (_, allowed) in listed.items() if allowed}
    assert commercial >= {"bleu4", "rouge-l", "length", "emb-average", "emb-extrema", "emb-greedy", "minilm-cosine"}
    for name in ("adem", "autojudge", "adem-minilm", "autojudge-minilm", "ruber", "ruber-minilm", "mh",
                 "unref-minilm"):
        license, allowed = listed[name]
        assert allowed is False and ("CC-BY-NC-SA-4.0" in license or "LicenseRef-unstated" in license), name
    assert listed["length"] == ("MIT", True)
    assert listed["unref-minilm"][0].startswith("CC-BY-NC-SA-4.0 AND GPL-3.0-only")
    for name, (license, allowed) in listed.items():
        assert isinstance(allowed, bool) and license, name
        assert not (allowed and ("-NC-" in license or "GPL" in license or "unstated" in license)), name


def test_models_say_which_component_files_run_where(full_app):
    """A GPU pod serves the fp32 encoder and a CPU pod the int8 file in float (int8-float), or w8a8 where
    built and the CPU has integer dot products (on the CPU EP), and says why; their scores differ slightly.
    Where auto takes OpenVINO (bf16 or AVX-512 VNNI), it serves int8-float there and says so."""
    from service.artifacts import openvino
    from service.artifacts.hardware import cpu_flags, int8_dot_products

    models = {m["name"]: m for m in full_app.test_client().get("/models").get_json()["models"]}
    (encoder,) = models["adem-minilm"]["components"]
    on_openvino = openvino.found().usable and openvino.gains(cpu_flags()) is not None
    provider = openvino.EP if on_openvino else "CPUExecutionProvider"
    assert encoder["name"] == "minilm-l6" and encoder["providers"] == [provider] == [encoder["provider"]]
    built = (Path(full_app.config["SETTINGS"].model_store) / "minilm-l6" / "encoder-w8a8.onnx").is_file()
    w8a8 = int8_dot_products() and built and not on_openvino
    precision, file = ("w8a8", "encoder-w8a8.onnx") if w8a8 else ("int8-float", "encoder-int8.onnx")
    assert (encoder["precision"], encoder["file"]) == (precision, file)
    if on_openvino:  # its bound: what make bench measured for OpenVINO at this compute, or null where unmeasured
        assert encoder["chosen_by"] == "auto: int8-float on OpenVINO"
        assert models["adem-minilm"]["batch_bound"] is None or 0 <= models["adem-minilm"]["batch_bound"] < 0.05
    else:
        assert encoder["chosen_by"].startswith("auto: the CPU reports")
        assert models["adem-minilm"]["batch_bound"] == 0.0
    assert models["ruber"]["components"][0]["name"] == "glove-50d"
    assert "precision" not in models["ruber"]["components"][0]
    assert models["bleu4"]["components"] == [] and models["bleu4"]["batch_bound"] == 0.0
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


def _assert_documented(document: dict, method: str, path: str, response, template: str | None = None) -> None:
    """The answer's status is one the document declares for the operation (`template`, where `path`
    fills one in), and its body is valid against the schema declared for that status and media type
    (unknown fields included)."""
    from openapi_schema_validator import OAS30Validator

    responses = document["paths"][template or path][method.lower()]["responses"]
    declared = responses.get(str(response.status_code))
    assert declared is not None, (method, path, response.status_code, sorted(responses))
    assert response.mimetype in declared["content"], (method, path, response.mimetype)
    schema = declared["content"][response.mimetype]["schema"]
    body = response.get_json() if response.is_json else response.get_data(as_text=True)
    OAS30Validator({**schema, "components": document["components"]}).validate(body)


def test_responses_match_the_schemas_the_openapi_document_declares(client, baseline_store, tmp_path, monkeypatch):
    """Every 200 body loads through its documented schema, which refuses unknown fields: the
    document describes what the service sends, field for field. So do the body /readyz gives under
    gunicorn (with the pod's worker counts) and the 401 of every GET the token guards."""
    from service.api import schemas
    from service.store import readiness as worker_readiness
    from service.app import create_app

    document = client.get("/openapi.json").get_json()
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
        # the extensions' fields: context_dropped and warnings
        ("POST", "/rerank", {"model": "length", "context": ["hi", "there"], "candidates": ["a", "да", "😀"],
                             "on_long_context": "keep_last"}, schemas.RerankResponseSchema),
        ("POST", "/score", {"model": "bleu4", "items": [item, {**item, "response": " "}],
                            "on_long_context": "keep_last"}, schemas.ScoreResponseSchema),
        ("POST", "/score", {"models": ["bleu4", "length"], "items": [{**item, "response": "你好"}],
                            "on_long_context": "keep_last"}, schemas.MultiScoreResponseSchema),
        ("POST", "/correlate", {"human": human, "scores": {"a": a, "b": b}, "systems": list("xyzxyzxyzx"),
                                "resamples": 50}, schemas.CorrelateResponseSchema),
        ("POST", "/correlate", {"human": human, "scores": {"a": a}, "systems": list("xyzxyzxyzx"), "resamples": 50,
                                "system_resampling": "systems"}, schemas.CorrelateResponseSchema),
        ("POST", "/correlate", {"human": human, "scores": {"a": a}, "systems": list("xyxyxyxyxy"), "resamples": 50,
                                "inputs": [f"c{i // 2}" for i in range(10)]}, schemas.CorrelateResponseSchema),
        ("POST", "/correlate", {"human": [[h, h + 1] for h in human], "scores": {"a": a, "flat": [1] * 10},
                                "resamples": 0}, schemas.CorrelateResponseSchema),
        ("POST", "/correlate", {"human": [[h, h + i % 3] for i, h in enumerate(human)], "scores": {"a": a},
                                "resamples": 50}, schemas.CorrelateResponseSchema),  # alpha's intervals
        ("POST", "/human-eval", {"ratings": ratings, "reverse": ["robotic"], "qc_system": "degraded"},
         schemas.HumanEvalResponseSchema),
        # API.md's example, verbatim: its qc_system has no rating, which `warnings` says (was a 422)
        ("POST", "/human-eval", {"ratings": [{"rater": "w1", "system": "A", "item": "d17",
                                              "scores": {"interesting": 73, "fun": 60, "robotic": 20}}],
                                 "reverse": ["robotic", "repetitive"], "scale": [0, 100], "qc_system": "degraded",
                                 "alpha": 0.05}, schemas.HumanEvalResponseSchema),
    ]
    for method, path, body, schema in cases:
        response = client.open(path, method=method, json=body)
        assert response.status_code == 200, (path, response.get_json())
        schema().load(response.get_json())  # raises on a missing, extra or mistyped field
        _assert_documented(document, method, path, response)

    # Under gunicorn (service/server/gunicorn.conf.py sets these) a ready /readyz also counts the pod's workers.
    monkeypatch.setenv(worker_readiness.DIR_ENV, str(tmp_path / "ready"))
    worker_readiness.record_workers(1)
    worker_readiness.mark_ready(os.getpid())  # a live worker's marker
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.get_json()["workers_ready"] == ready.get_json()["workers"] == 1
    schemas.StatusSchema().load(ready.get_json())
    _assert_documented(document, "GET", "/readyz", ready)

    guarded = create_app({"model_store": baseline_store, "load_sync": True, "models": ["length"],
                          "api_token": "t0ken"}).test_client()
    for path in ("/models", "/metrics"):
        denied = guarded.get(path)
        assert denied.status_code == 401, path
        _assert_documented(document, "GET", path, denied)
        assert document["paths"][path]["get"]["security"] == [{"bearer": []}, {}]
        metrics_ok = guarded.get(path, headers={"Authorization": "Bearer t0ken"})
        _assert_documented(document, "GET", path, metrics_ok)
    # the kubelet's probes carry no token; a browser loads the API page's document before its user enters one
    for path in ("/healthz", "/readyz", "/openapi.json"):
        assert guarded.get(path).status_code == 200, path
        assert "401" not in document["paths"][path]["get"]["responses"]
        assert not document["paths"][path]["get"].get("security")


def test_the_document_says_kendall_is_tau_b(client):
    schemas = client.get("/openapi.json").get_json()["components"]["schemas"]
    assert "tau-b" in schemas["CorrelateRequest"]["properties"]["methods"]["description"]
    assert "tau-b" in schemas["Correlation"]["properties"]["r"]["description"]


def test_openapi_describes_every_endpoint_and_validates(client):
    from openapi_spec_validator import validate

    document = client.get("/openapi.json").get_json()
    validate(document)
    routes = {re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule): rule.methods - {"HEAD", "OPTIONS"}
              for rule in client.application.url_map.iter_rules()
              if not rule.rule.startswith(("/static/", "/docs"))}  # the API page, for people, is not the API
    assert {path: {m.upper() for m in operations} for path, operations in document["paths"].items()} == routes
    for path in ("/score", "/rerank", "/correlate", "/human-eval"):
        operation = document["paths"][path]["post"]
        assert operation["requestBody"]["content"]["application/json"]["example"]
        assert {"200", "422"} <= set(operation["responses"])
        assert "Allow" in operation["responses"]["405"]["headers"]  # what a 405 answers with (test_errors.py)
    item = document["components"]["schemas"]["Item"]
    assert set(item["required"]) == {"context", "response"}
    # an empty rater, system or item is refused (422), so the document says so
    rating = document["components"]["schemas"]["Rating"]["properties"]
    assert all(rating[key]["minLength"] == 1 for key in ("rater", "system", "item"))


def test_every_operation_has_a_lower_camel_case_operation_id(client):
    """Generated clients name their methods after `operationId`."""
    document = client.get("/openapi.json").get_json()
    ids = {(path, method): operation["operationId"] for path, operations in document["paths"].items()
           for method, operation in operations.items()}
    assert ids == {("/score", "post"): "score", ("/rerank", "post"): "rerank", ("/correlate", "post"): "correlate",
                   ("/human-eval", "post"): "humanEval", ("/healthz", "get"): "healthz", ("/readyz", "get"): "readyz",
                   ("/models", "get"): "listModels", ("/metrics", "get"): "metrics",
                   ("/openapi.json", "get"): "openapi", ("/v2", "get"): "v2ServerMetadata",
                   ("/v2/health/live", "get"): "v2Live", ("/v2/health/ready", "get"): "v2Ready",
                   ("/v2/models/{name}", "get"): "v2ModelMetadata",
                   ("/v2/models/{name}/versions/{version}", "get"): "v2ModelMetadataVersion",
                   ("/v2/models/{name}/ready", "get"): "v2ModelReady",
                   ("/v2/models/{name}/versions/{version}/ready", "get"): "v2ModelReadyVersion",
                   ("/v2/models/{name}/infer", "post"): "v2Infer",
                   ("/v2/models/{name}/versions/{version}/infer", "post"): "v2InferVersion"}


def test_v2_answers_match_the_openapi_document(client, baseline_store):
    """The Open Inference Protocol paths: each answer, success or error, has a status the document
    declares and a body valid against its schema; so does an infer request the service takes."""
    from openapi_schema_validator import OAS30Validator

    from service.app import create_app
    from service.store.model_store import ModelStore

    document = client.get("/openapi.json").get_json()
    version = client.get("/v2/models/bleu4").get_json()["versions"][0]
    text = lambda name, values: {"name": name, "datatype": "BYTES", "shape": [len(values)], "data": values}  # noqa: E731
    infer = {"id": "r1", "inputs": [text("context", ['["hi", "who?"]']), text("response", ["me", "it is me"]),
                                    text("reference", ["me"])], "outputs": [{"name": "score"}]}
    rerank = {"inputs": [text("context", ["hi"]), text("response", [["a"], ["b c"]])],
              "parameters": {"rerank": True, "top_k": 1, "options": "{}"}}
    OAS30Validator({"$ref": "#/components/schemas/V2InferRequest", "components": document["components"]}).validate(infer)
    model, versioned = "/v2/models/{name}", "/v2/models/{name}/versions/{version}"
    cases = [
        ("GET", "/v2", "/v2", None, 200), ("GET", "/v2/health/live", None, None, 200),
        ("GET", "/v2/health/ready", None, None, 200), ("GET", "/v2/models/bleu4", model, None, 200),
        ("GET", f"/v2/models/bleu4/versions/{version}", versioned, None, 200),
        ("GET", "/v2/models/bleu4/versions/0.0.0", versioned, None, 404),
        ("GET", "/v2/models/nope", model, None, 404), ("GET", "/v2/models/bleu4/ready", model + "/ready", None, 200),
        ("GET", f"/v2/models/bleu4/versions/{version}/ready", versioned + "/ready", None, 200),
        ("POST", "/v2/models/bleu4/infer", model + "/infer", infer, 200),
        ("POST", f"/v2/models/length/versions/{client.get('/v2/models/length').get_json()['versions'][0]}/infer",
         versioned + "/infer", rerank, 200),
        ("POST", "/v2/models/bleu4/infer", model + "/infer", {"inputs": []}, 422),
        ("POST", "/v2/models/bleu4/infer", model + "/infer", {"inputs": [text("context", ["[" * 99 + "]" * 99]), text("response", ["a"])]}, 413),
        ("POST", "/v2/models/nope/infer", model + "/infer", infer, 404),
        ("DELETE", "/v2/models/bleu4/infer", model + "/infer", None, 405),
    ]
    for method, path, template, body, status in cases:
        response = client.open(path, method=method, json=body)
        assert response.status_code == status, (path, response.get_json())
        _assert_documented(document, method if status != 405 else "POST", path, response, template)
    loading = create_app({"model_store": baseline_store, "load_sync": True, "models": ["length"]})
    loading.extensions["dialscore.store"] = ModelStore(baseline_store)  # a store that has not loaded yet
    for path, template in (("/v2/health/ready", None), ("/v2/models/length/ready", model + "/ready"),
                           ("/v2/models/length", model)):
        response = loading.test_client().get(path)
        assert response.status_code in (400, 503), (path, response.get_json())
        _assert_documented(document, "GET", path, response, template)


def test_a_503_declares_retry_after(client):
    """What a client may wait for (test_errors.py: sent while loading, not for a model that failed)."""
    document = client.get("/openapi.json").get_json()
    for path, method in (("/score", "post"), ("/rerank", "post"), ("/correlate", "post"), ("/human-eval", "post"),
                         ("/readyz", "get")):
        header = document["paths"][path][method]["responses"]["503"]["headers"]["Retry-After"]
        assert header["schema"]["type"] == "integer" and "failed" in header["description"]


def _budget_taken(value: str) -> bool:
    from service.errors import BadHeader
    from service.server.front import budget_of

    try:
        return budget_of(value, 30.0) > 0
    except BadHeader:
        return False


def test_the_computing_operations_take_a_budget_and_name_every_refusal(client):
    """X-Request-Timeout on the operations that compute, and the 503 codes a client acts on (docs/api.md)."""
    document = client.get("/openapi.json").get_json()
    parameter = document["components"]["parameters"]["RequestTimeout"]
    assert (parameter["name"], parameter["in"], parameter["required"]) == ("X-Request-Timeout", "header", False)
    # The front's spelling of a number as the pattern; its range (above 0, at most 3600), which a pattern
    # cannot state, in the description.
    assert parameter["schema"]["type"] == "string" and "at most 3600" in parameter["description"]
    for value in ("1", "0.25", ".5", "5.", "3600", "1e3", "1E1", "+2", "1_0", "inf", " 1", "-1", "0x10", "1,5"):
        assert bool(re.fullmatch(parameter["schema"]["pattern"], value)) == _budget_taken(value), value
    for out_of_range in ("0", "0.0", "3601"):
        assert re.fullmatch(parameter["schema"]["pattern"], out_of_range) and not _budget_taken(out_of_range)
    for path in ("/score", "/rerank", "/correlate", "/human-eval"):
        operation = document["paths"][path]["post"]
        assert operation["parameters"] == [{"$ref": "#/components/parameters/RequestTimeout"}]
        refused = operation["responses"]["503"]["description"]
        assert all(f"`{code}`" in refused for code in ("overloaded", "deadline_exceeded", "shutting_down",
                                                       "not_ready"))
    assert "parameters" not in document["paths"]["/readyz"]["get"]


def test_the_readme_example_bodies_give_full_results(client):
    """docs/examples/*.json, which README's curl lines send: intervals, system level, a ranking."""

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


def test_client_chosen_methods_do_not_become_metric_labels(client):
    """The `method` label takes a fixed set of values: any other verb is "other", or every invented
    one would add a series for the life of the process, token or not."""
    for verb in ("ZZQA", "ZZQB"):
        assert client.open("/score", method=verb).status_code == 405
    assert client.open("/nowhere", method="ZZQC").status_code == 404
    text = client.get("/metrics").get_data(as_text=True)
    assert "ZZQ" not in text
    # a wrong method on a real route is counted under that route; an unknown path stays "unmatched"
    assert 'dialscore_requests_total{endpoint="/score",method="other",status="405"}' in text
    assert 'dialscore_requests_total{endpoint="unmatched",method="other",status="404"}' in text
    assert 'endpoint="unmatched",method="other",status="405"' not in text
    client.delete("/score")
    assert 'method="DELETE",status="405"' in client.get("/metrics").get_data(as_text=True)


def test_the_openapi_human_eval_example_is_the_readme_one():
    """The Docker image ships service/ but not docs/, so the document carries its own copy of
    docs/examples/human-eval.json: this keeps the two equal."""
    import json

    from service.api.openapi import openapi_document

    examples = Path(__file__).resolve().parents[2] / "docs" / "examples"
    example = openapi_document()["paths"]["/human-eval"]["post"]["requestBody"]["content"]["application/json"]
    assert example["example"] == json.loads((examples / "human-eval.json").read_text())


def test_every_openapi_example_gives_a_full_result(full_app):
    """A client that sends the document's example for an endpoint gets a 200 with something in it."""
    client = full_app.test_client()
    document = client.get("/openapi.json").get_json()
    posts = {path: ops["post"] for path, ops in document["paths"].items() if "post" in ops}
    assert set(posts) == {"/score", "/rerank", "/correlate", "/human-eval", "/v2/models/{name}/infer",
                          "/v2/models/{name}/versions/{version}/infer"}
    model = "unref-minilm"  # the v2 example re-ranks without a reference
    version = client.get(f"/v2/models/{model}").get_json()["versions"][0]
    for template, operation in posts.items():
        example = operation["requestBody"]["content"]["application/json"]["example"]
        path = template.replace("{name}", model).replace("{version}", version)
        response = client.post(path, json=example)
        assert response.status_code == 200, (path, response.get_json())
        body = response.get_json()
        empty = [key for key, value in body.items() if isinstance(value, (list, dict)) and not value]
        assert not empty, (path, empty, body)
        _assert_documented(document, "POST", path, response, template)
    human_eval = client.post("/human-eval", json=posts["/human-eval"]["requestBody"]["content"]["application/json"]
                             ["example"]).get_json()
    assert human_eval["raters"]["passed"] and human_eval["significance"]


def test_requests_the_document_calls_invalid_are_the_ones_the_service_refuses(client):
    """Rules the schemas check in code (exactly one of model/models, three human scores at least,
    bounded human scores) are in the document too: for each request, the document's verdict and
    the service's agree (found by schemathesis: the document used to accept all of these)."""
    from jsonschema.exceptions import ValidationError
    from openapi_schema_validator import OAS30Validator

    document = client.get("/openapi.json").get_json()
    item = {"context": ["hi"], "response": "hello", "reference": "hey"}
    cases = [
        ("/score", "ScoreRequest", {"model": "length", "items": [item]}),
        ("/score", "ScoreRequest", {"items": [item]}),
        ("/score", "ScoreRequest", {"model": "length", "models": ["length"], "items": [item]}),
        ("/correlate", "CorrelateRequest", {"human": [1, 2, 3], "scores": {"a": [1, 3, 2]}, "resamples": 0}),
        ("/correlate", "CorrelateRequest", {"human": [1, 2], "scores": {"a": [1, 3]}, "resamples": 0}),
        ("/correlate", "CorrelateRequest", {"human": [1e16, 2, 3], "scores": {"a": [1, 3, 2]}, "resamples": 0}),
        ("/correlate", "CorrelateRequest", {"human": [[1e16], [2], [3]], "scores": {"a": [1, 3, 2]}, "resamples": 0}),
    ]
    for path, schema_name, body in cases:
        validator = OAS30Validator({"$ref": f"#/components/schemas/{schema_name}", "components": document["components"]})
        try:
            validator.validate(body)
            documented_valid = True
        except ValidationError:
            documented_valid = False
        status = client.post(path, json=body).status_code
        assert (status == 200) == documented_valid, (body, status)


def test_answers_say_nosniff_and_no_store(client):
    """JSON about one request: no browser may sniff it as another type,
    and no cache between a client and the service may keep a score or an error."""
    for response in (client.get("/healthz"), client.get("/nope"), client.post("/score", data=b"{"),
                     client.post("/score", json={"model": "length", "items": [{"context": ["a"], "response": "b"}]})):
        assert response.headers["X-Content-Type-Options"] == "nosniff", response.status
        assert response.headers["Cache-Control"] == "no-store", response.status


def _items_scored(client, model: str) -> float:
    return metric_sample(client, f'dialscore_items_scored_total{{model="{model}"}}')


def test_items_scored_counts_every_item_of_a_request_not_the_request(client):
    """dialscore_items_scored_total is 'Items scored by model': a request of three items adds 3
    (a counter that added 1 per request read as a third of the real throughput)."""
    before = _items_scored(client, "length")
    items = [{"context": ["a"], "response": "b"}, {"context": ["a"], "response": "b c"},
             {"context": ["a"], "response": "b c d"}]
    response = client.post("/score", json={"model": "length", "items": items})
    assert response.status_code == 200
    assert _items_scored(client, "length") == before + 3


def test_the_document_declares_the_open_intervals_the_service_enforces(client):
    """`confidence` and `alpha` are in (0, 1): apispec writes closed bounds, so the document adds
    exclusiveMinimum/Maximum; a bound is invalid by the document and refused by the service, a value
    inside is valid by both."""
    from jsonschema.exceptions import ValidationError
    from openapi_schema_validator import OAS30Validator

    document = client.get("/openapi.json").get_json()
    rating = {"rater": "a", "system": "s", "item": "i", "scores": {"fun": 5}}
    cases = [("/correlate", "CorrelateRequest", {"human": [1, 2, 3], "scores": {"a": [1, 3, 2]}, "resamples": 0},
              "confidence"),
             ("/human-eval", "HumanEvalRequest", {"ratings": [rating]}, "alpha")]
    for path, schema_name, body, field in cases:
        validator = OAS30Validator({"$ref": f"#/components/schemas/{schema_name}", "components": document["components"]})
        validator.validate({**body, field: 0.5})
        for bound in (0, 1):
            try:
                validator.validate({**body, field: bound})
            except ValidationError:
                pass
            else:
                raise AssertionError(f"the document accepts {field} = {bound}")
            assert client.post(path, json={**body, field: bound}).status_code == 422, (field, bound)


def test_models_says_whether_the_store_is_still_loading(client, baseline_store):
    """`loading` is true before the models have loaded and false after (a client polls it)."""
    from service.app import create_app
    from service.store.model_store import ModelStore

    assert client.get("/models").get_json()["loading"] is False
    app = create_app({"model_store": baseline_store, "load_sync": True, "models": ["length"]})
    app.extensions["dialscore.store"] = ModelStore(baseline_store)  # a store that has not loaded yet
    assert app.test_client().get("/models").get_json()["loading"] is True


def test_readiness_seen_loaded_counts_the_workers_own_marker(tmp_path, monkeypatch):
    """The loading thread writes this worker's marker, then sets `loaded`; /readyz read the markers
    first, so a load finishing between the two reads answered ready with 0 workers ready."""
    from service.api.dataplane import readiness
    from service.store import readiness as markers

    monkeypatch.setenv(markers.DIR_ENV, str(tmp_path / "ready"))
    markers.record_workers(1)

    class StoreFinishingNow:  # its load ends as /readyz looks at it
        scorers, failures = {"length": None}, {}

        @property
        def loaded(self) -> bool:
            markers.mark_ready()
            return True

    assert readiness(StoreFinishingNow()) == (True, {"models": ["length"], "workers_ready": 1, "workers": 1})


def test_the_api_page_says_what_readyz_answers_for_a_pod():
    """readiness(): 200 once every worker has loaded, then while any serves (a crashed or recycled sibling,
    whose replacement loads before it takes a connection, does not take the pod out), as docs/deploy.md's
    probes table says."""
    [line] = [line for line in (Path(__file__).parents[2] / "docs" / "api.md").read_text(encoding="utf-8").splitlines()
              if line.startswith("curl -s 127.0.0.1:8000/readyz ")]
    assert "once every worker has loaded" in line and "then while any serves" in line
