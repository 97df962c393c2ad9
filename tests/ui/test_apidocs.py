"""emulator.ui.apidocs: /docs, Swagger UI over the served schema, assets from the
swagger-ui-bundle package (offline), started by payemu's own script."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from emulator.ui.security import headers


def test_the_page_loads_local_assets_only(anon: TestClient) -> None:
    answer = anon.get("/docs")
    assert answer.status_code == 200
    for name, value in headers(embeddable=False).items():
        assert answer.headers[name] == value
    sources = re.findall(r'(?:src|href)="([^"]+)"', answer.text)
    assert "/docs/static/swagger-ui-bundle.js" in sources
    assert "/docs/static/swagger-ui.css" in sources
    assert "/_emulator/static/apidocs.js" in sources
    assert all(source.startswith("/") for source in sources), sources
    assert "<script>" not in answer.text  # no inline code: the policy would block it
    assert 'data-schema="/swagger/1.0/swagger.json"' in answer.text
    assert 'data-key="sandbox-api-key"' in answer.text


def test_the_assets_are_served(anon: TestClient) -> None:
    bundle = anon.get("/docs/static/swagger-ui-bundle.js")
    assert bundle.status_code == 200
    assert "SwaggerUIBundle" in bundle.text
    assert anon.get("/docs/static/swagger-ui.css").status_code == 200
    start = anon.get("/_emulator/static/apidocs.js")
    assert start.status_code == 200
    assert "preauthorizeApiKey" in start.text


def test_the_served_schema_the_page_reads_calls_payemu_itself(anon: TestClient) -> None:
    document = anon.get("/swagger/1.0/swagger.json").json()
    assert document["servers"] == [{"url": "/"}]
    assert "ApiKeyAuth" in document["components"]["securitySchemes"]


def test_with_an_admin_key_the_page_fills_in_no_key(make_app) -> None:  # type: ignore[no-untyped-def]
    with TestClient(make_app(admin_key="s3cret-admin")) as anon:
        answer = anon.get("/docs")
    assert 'data-key=""' in answer.text


def test_the_assets_package_is_not_imported_at_start_up() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from emulator.app.build import create_app; create_app(); print('swagger_ui_bundle' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"
