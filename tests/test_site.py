"""The documentation site as a reader meets it: built from the repository in strict mode (no
broken link, no missing reference), served on 127.0.0.1, and opened in headless Chromium: the
front page's picture and chart load, every gallery image loads, and the search box finds a
transform by its name.

The build needs the ``docs`` extra (MkDocs, which the ``test`` extra brings); the browser part
needs Chromium, its driver and Selenium (``apt-get install chromium chromium-driver``,
``pip install selenium``), and is skipped where any of them is missing."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built as the README says (``mkdocs build --strict``) into a folder of its own."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    pytest.importorskip("mkdocstrings")
    out = tmp_path_factory.mktemp("site")
    cache = tmp_path_factory.mktemp("cache")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "DALIAUG_CACHE": str(cache), "NO_MKDOCS_2_WARNING": "1"},
    )
    assert build.returncode == 0, build.stderr[-4000:]
    return out


def test_the_site_builds_strictly_with_every_page(site: Path) -> None:
    for page in (ROOT / "docs" / "pages").glob("*.md"):
        name = page.stem
        built = site / "index.html" if name == "index" else site / name / "index.html"
        assert built.is_file(), page.name
    assert (site / "assets" / "front.jpg").is_file() and (site / "assets" / "speed.svg").is_file()
    assert len(list((site / "gallery").glob("*.jpg"))) >= 50
    assert (site / "repo" / "bench" / "results" / "LATEST" / "index.html").is_file()


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    handler = functools.partial(QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    thread.join()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No line per request in the test's output."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.skip("no Chromium or chromedriver (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    service = webdriver.ChromeService(executable_path=driver)
    chrome = webdriver.Chrome(options=options, service=service)
    chrome.set_page_load_timeout(60)
    yield chrome
    chrome.quit()


LOADED = (
    "return [...document.images].map(i => [i.getAttribute('src'), i.complete && i.naturalWidth])"
)
"""Each image of the page: its ``src`` and its width once loaded (0 where it failed)."""


def images(browser: Any, url: str) -> dict[str, int]:
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(url)
    WebDriverWait(browser, 30).until(
        lambda b: b.execute_script("return [...document.images].every(i => i.complete)")
    )
    return dict(browser.execute_script(LOADED))


def test_the_front_page_shows_its_picture_and_chart(browser: Any, server: str) -> None:
    shown = images(browser, server + "/")
    assert shown["assets/front.jpg"] > 500, shown
    assert shown["assets/speed.svg"] > 500, shown


def test_every_gallery_image_loads(browser: Any, server: str) -> None:
    from daliaug.transforms import TRANSFORMS

    shown = images(browser, server + "/gallery/")
    pictures = {
        src: width for src, width in shown.items() if "gallery/" in src or src.endswith(".jpg")
    }
    assert len(pictures) == len(TRANSFORMS) - 1  # every transform but normalize
    assert all(width > 100 for width in pictures.values()), pictures


@pytest.mark.parametrize("name", ["keras_rand_augment", "mosaic"])
def test_the_search_box_finds_a_transform_by_name(browser: Any, server: str, name: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server + "/")
    browser.find_element(By.CSS_SELECTOR, "label.md-search__icon, label[for='__search']").click()
    box = WebDriverWait(browser, 30).until(
        lambda b: b.find_element(By.CSS_SELECTOR, "input.md-search__input")
    )
    box.send_keys(name)

    def found(b: Any) -> list[str]:
        items = b.find_elements(By.CSS_SELECTOR, ".md-search-result__item a")
        return [i.get_attribute("href") for i in items if name in (i.text or "")]

    hits = WebDriverWait(browser, 30).until(found)
    assert any("/gallery/" in h or "/transforms/" in h or "/config/" in h for h in hits), hits
