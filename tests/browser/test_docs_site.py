"""The documentation site as a reader gets it: built by ``mkdocs build --strict`` (Material for MkDocs,
from the test lock), then opened in a real browser.

The browser is Debian's chromium, driven by Playwright with ``executable_path`` (no browser can be
downloaded here; .ci/run installs chromium where it can): it loads the home page and the Argo CD
guide, screenshots both, checks that the navigation lists every guide that mkdocs.yml names, and
that the search box, given ``kustomize``, finds the Argo CD guide. Skipped, with the reason, where
chromium is missing. ``MEMCACHED_GITOPS_SCREENSHOTS=DIR`` keeps the screenshots there to look at.
"""

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
import yaml

from tests.conftest import REPO

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None)


def nav_pages(nav: list[Any], section: str = "") -> list[tuple[str, str, str]]:
    """(section, title, file) of every page mkdocs.yml's nav names."""
    out: list[tuple[str, str, str]] = []
    for item in nav:
        for title, value in item.items():
            if isinstance(value, list):
                out += nav_pages(value, title)
            else:
                out.append((section, title, value))
    return out


NAV = nav_pages(yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"), "-d", str(out)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def page_dir(site: Path, file: str) -> Path:
    """Where mkdocs writes a page (use_directory_urls): guides/ci.md -> guides/ci/index.html."""
    stem = file.removesuffix(".md")
    return site / ("" if stem == "index" else stem) / "index.html"


def test_the_site_builds_strict_with_every_page_of_the_nav(site: Path) -> None:
    assert NAV and {s for s, _, _ in NAV} >= {"Guides", "Reference", "Design"}
    for _, title, file in NAV:
        assert (REPO / "docs" / file).exists(), f"{title}: docs/{file} is missing"
        assert page_dir(site, file).exists(), f"{title}: not built"
    assert (site / "search" / "search_index.json").exists(), "the search index"


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # root in a container: chromium's sandbox needs user namespaces it may not have
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield chromium
        finally:
            chromium.close()


def screenshots(tmp_path: Path) -> Path:
    kept = os.environ.get("MEMCACHED_GITOPS_SCREENSHOTS")
    folder = Path(kept) if kept else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_a_browser_shows_the_home_page_and_a_guide_with_every_guide_in_the_navigation(browser: Any, served: str,
                                                                                       tmp_path: Path) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(served + "/", wait_until="networkidle")
    assert "memcached-gitops" in page.title()
    folder = screenshots(tmp_path)
    page.screenshot(path=str(folder / "home.png"), full_page=False)
    links = page.eval_on_selector_all("nav.md-nav--primary a.md-nav__link", "els => els.map(e => e.textContent.trim())")
    guides = [title for section, title, _ in NAV if section == "Guides"]
    missing = [g for g in guides if g not in links]
    assert not missing, f"the navigation lacks {missing}: {links}"
    page.goto(served + "/guides/argocd/", wait_until="networkidle")
    assert page.locator("h1").first.inner_text().strip() == "Argo CD"
    page.screenshot(path=str(folder / "guide-argocd.png"), full_page=False)
    assert (folder / "home.png").stat().st_size > 10_000 and (folder / "guide-argocd.png").stat().st_size > 10_000
    page.close()


def test_searching_kustomize_finds_the_argo_cd_guide(browser: Any, served: str) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(served + "/", wait_until="networkidle")
    page.keyboard.press("/")  # Material's shortcut to the search box, as a reader would open it
    page.keyboard.type("kustomize", delay=50)
    page.wait_for_selector(".md-search-result__item", timeout=15_000)
    hrefs = page.eval_on_selector_all(".md-search-result__item a", "els => els.map(e => e.getAttribute('href'))")
    assert any("guides/argocd/" in (h or "") for h in hrefs), hrefs
    page.close()
