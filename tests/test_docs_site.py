"""The docs site builds with `mkdocs build --strict` (a broken link or anchor fails it) and loads
no font, script or style sheet from outside the site: a reader offline sees it whole, and
opening a page tells no third party."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# what would fetch a resource from another host when a page opens
EXTERNAL = re.compile(r"fonts\.googleapis|<script[^>]*\bsrc=\"(?:https?:)?//"
                      r"|<link[^>]*\bhref=\"(?:https?:)?//")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.mark.slow
def test_the_site_builds_strict_with_every_page(site: Path) -> None:
    pages = {path.parent.relative_to(site).as_posix()
             for path in site.rglob("index.html")}
    expected = {"." if doc.stem == "index" else doc.stem for doc in (ROOT / "docs").glob("*.md")}
    assert expected <= pages


@pytest.mark.slow
def test_the_readme_links_land_on_a_page_and_anchor(site: Path) -> None:
    """GitHub shows the README outside the site, so the strict build does not check its links."""
    links = re.findall(r"\]\(docs/(\w+)\.md(?:#([\w-]+))?\)", (ROOT / "README.md").read_text())
    assert len(links) > 10
    for page, anchor in links:
        html = site / ("" if page == "index" else page) / "index.html"
        assert html.is_file(), page
        assert not anchor or f'id="{anchor}"' in html.read_text(), f"{page}.md#{anchor}"


@pytest.mark.slow
def test_the_site_loads_nothing_from_outside(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert pages
    found = {page.relative_to(site).as_posix(): EXTERNAL.findall(page.read_text())
             for page in pages}
    assert not {page: hits for page, hits in found.items() if hits}


def test_the_check_sees_an_external_resource() -> None:
    """The pattern above catches each way a page could load from outside, and not a link."""
    for html in ('<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">',
                 '<script src="https://unpkg.com/x.js"></script>',
                 '<link rel="preconnect" href="//cdn.example">'):
        assert EXTERNAL.search(html), html
    assert not EXTERNAL.search('<a href="https://phoenix.arize.com">Arize Phoenix</a>')
    assert not EXTERNAL.search('<script src="assets/javascripts/bundle.js"></script>')
