"""The API page at /docs/: served offline from the pinned bundle, open without a token, assets whitelisted."""
from __future__ import annotations

import re

import pytest

from service.api import docs_page
from service.app import create_app
from tests.conftest import BASELINES, copy_store


@pytest.fixture(scope="module")
def guarded_client(tmp_path_factory):
    store = copy_store(tmp_path_factory.mktemp("store"), BASELINES)
    app = create_app({"model_store": store, "load_sync": True, "api_token": "sesame"})
    return app.test_client()


def test_docs_redirects_to_the_page(client):
    response = client.get("/docs")
    assert response.status_code == 308
    assert response.headers["Location"].endswith("/docs/")


def test_the_page_reads_the_served_document_and_loads_nothing_from_elsewhere(client):
    response = client.get("/docs/")
    assert response.status_code == 200
    assert response.content_type.startswith("text/html")
    html = response.get_data(as_text=True)
    assert 'url: "../openapi.json"' in html
    assert "validatorUrl: null" in html
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all(s.startswith("./") for s in sources), sources
    assert {s[2:] for s in sources} <= docs_page.ASSETS
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]


@pytest.mark.parametrize("name", sorted(docs_page.ASSETS))
def test_every_asset_the_page_names_is_served(client, name):
    response = client.get(f"/docs/{name}")
    assert response.status_code == 200
    assert len(response.get_data()) > 100


@pytest.mark.parametrize("name", ["swagger-ui-bundle.js.map", "index.j2", "..%2fLICENSE", "../openapi.json"])
def test_only_the_page_assets_are_served(client, name):
    response = client.get(f"/docs/{name}")
    assert response.status_code == 404
    assert response.get_json()["error"]["code"] == "not_found"


def test_with_a_token_the_page_and_its_document_are_open_and_scoring_is_not(guarded_client):
    assert guarded_client.get("/docs/").status_code == 200
    assert guarded_client.get("/docs/swagger-ui-bundle.js").status_code == 200
    assert guarded_client.get("/openapi.json").status_code == 200
    refused = guarded_client.post("/rerank", json={"model": "length", "context": ["hi"], "candidates": ["a"]})
    assert refused.status_code == 401
    allowed = guarded_client.post("/rerank", json={"model": "length", "context": ["hi"], "candidates": ["a"]},
                                  headers={"Authorization": "Bearer sesame"})
    assert allowed.status_code == 200


def test_the_document_marks_itself_open(client):
    document = client.get("/openapi.json").get_json()
    assert document["paths"]["/openapi.json"]["get"]["security"] == []
