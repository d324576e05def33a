"""Check every internal link of the built HTML site: the target file exists and so
does its ``#anchor``. External links (http:, https:, mailto:) are not followed.

    python docs/check_links.py docs/_build/html
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.ids.add(attrs[key])
        for key in ("href", "src"):
            if attrs.get(key) and not (tag == "link" and key == "href"
                                       and attrs.get("rel") in ("preconnect",)):
                self.links.append(attrs[key])


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def broken_links(root: Path) -> list[str]:
    """``'page: link (why)'`` for each internal link that leads nowhere."""
    pages = {path: _parse(path) for path in root.rglob("*.html")}
    broken = []
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{path.relative_to(root)}: {link} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{path.relative_to(root)}: {link} (no such anchor)")
    return broken


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = Path(argv[0] if argv else "docs/_build/html").resolve()
    if not (root / "index.html").exists():
        print(f"check_links: {root} has no index.html; build the docs first")
        return 2
    broken = broken_links(root)
    for line in broken:
        print(line)
    pages = sum(1 for _ in root.rglob("*.html"))
    print(f"check_links: {pages} pages, {len(broken)} broken internal links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
