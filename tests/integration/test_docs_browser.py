"""The API page in a real browser: headless Chromium (Debian's) loads /docs/ from a live gunicorn, lists the
endpoints, authorises with the token and tries a re-ranking from the page (200). The screenshot is kept in
build/test-artifacts/. Without a browser the test skips; `make browser-test` installs Debian's chromium."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import copy_store
from tests.live_server import REPO, running_server

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
ARTIFACTS = REPO / "build" / "test-artifacts"
TOKEN = "browser-test-token"
WAIT_S = 60

NO_BROWSER = "no headless Chromium here: `make browser-test` installs Debian's chromium and chromium-driver"
if not (CHROMIUM and CHROMEDRIVER):
    # make browser-test: a skip there would hide a failure. Not a DIALSCORE_* name: the server it starts
    # inherits the environment and would warn of a variable nothing reads.
    if os.environ.get("BROWSER_TEST_REQUIRED"):
        raise RuntimeError(NO_BROWSER)
    pytest.skip(NO_BROWSER, allow_module_level=True)


@pytest.fixture()
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,2000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_the_api_page_lists_the_endpoints_and_a_rerank_tried_from_it_answers_200(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    store = copy_store(tmp_path / "model_store", ("autojudge",))  # the document's /rerank example
    with running_server(store, {"DIALSCORE_API_TOKEN": TOKEN}, workers=1) as server:
        wait = WebDriverWait(browser, WAIT_S)
        browser.get(f"{server.url}/docs")
        wait.until(seen.presence_of_element_located((By.CSS_SELECTOR, ".opblock-summary-path")))
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "docs-page.png"))
        paths = {e.get_attribute("data-path") or e.text for e in
                 browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
        assert {"/score", "/rerank", "/models", "/correlate"} <= {p.strip() for p in paths}, paths

        browser.find_element(By.CSS_SELECTOR, ".auth-wrapper .authorize").click()
        field = wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, ".auth-container input")))
        field.send_keys(TOKEN)
        browser.find_element(By.CSS_SELECTOR, ".auth-btn-wrapper .authorize").click()
        browser.find_element(By.CSS_SELECTOR, ".auth-btn-wrapper .btn-done").click()

        operation = browser.find_element(By.ID, "operations-default-rerank")
        operation.find_element(By.CSS_SELECTOR, ".opblock-summary").click()
        wait.until(lambda _: operation.find_elements(By.CSS_SELECTOR, ".try-out__btn"))[0].click()
        wait.until(lambda _: operation.find_elements(By.CSS_SELECTOR, ".execute"))[0].click()
        status = wait.until(lambda _: operation.find_elements(
            By.CSS_SELECTOR, ".live-responses-table .response .response-col_status"))[0]
        body = operation.find_element(By.CSS_SELECTOR, ".live-responses-table .response .response-col_description pre")
        shot = ARTIFACTS / "docs-page-rerank.png"
        browser.execute_script("arguments[0].scrollIntoView();", status)
        browser.save_screenshot(str(shot))
        print(f"screenshot: {shot}")
        assert status.text.strip() == "200", body.text
        assert '"ranking"' in body.text and '"model": "autojudge"' in body.text, body.text
        assert Path(shot).stat().st_size > 10_000
