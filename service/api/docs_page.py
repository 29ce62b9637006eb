"""The interactive API page at /docs/: Swagger UI from the pinned `swagger-ui-bundle` package, offline.

The page reads the served `openapi.json` (relative, so it works behind a path prefix); no asset comes
from a CDN and the spec validator is off, so the page makes no request beyond this service. It is open
without a token like the probes (service/api/middleware.py); "Try it out" sends the token entered under
"Authorize", so the scoring endpoints stay guarded.
"""
from __future__ import annotations

from flask import Blueprint, Response, abort, redirect, render_template_string, send_from_directory
from swagger_ui_bundle import swagger_ui_path

bp = Blueprint("docs_page", __name__)

PAGE = "/docs/"
# What the page loads: the bundle's source maps and alternative builds are not served.
ASSETS = frozenset({"swagger-ui.css", "index.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js",
                    "favicon-16x16.png", "favicon-32x32.png"})
# Everything from this service: the page's one inline script starts Swagger UI; its styles set inline ones.
CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; frame-ancestors 'none'")
_TEMPLATE = (swagger_ui_path / "index.j2").read_text(encoding="utf-8")


@bp.get("/docs")
def docs_redirect() -> Response:
    return redirect(PAGE, code=308)  # the page's assets are relative to /docs/


@bp.get(PAGE)
def docs_page() -> Response:
    html = render_template_string(_TEMPLATE, openapi_spec_url="../openapi.json")
    response = Response(html.replace("<title>Swagger UI</title>", "<title>dialscore API</title>"),
                        content_type="text/html; charset=utf-8")
    response.headers["Content-Security-Policy"] = CSP
    return response


@bp.get(f"{PAGE}<name>")
def docs_asset(name: str) -> Response:
    if name not in ASSETS:
        abort(404)
    return send_from_directory(str(swagger_ui_path), name, max_age=3600)
