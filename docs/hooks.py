"""MkDocs hooks of the documentation site (``mkdocs.yml``): the generated sections (config and
command line reference, gallery) written into their pages, and links to repository files
outside ``docs/pages`` (records, bench/README.md, the code) kept working.

A page links to a repository file as it would on a checkout (``../../bench/results/x.md``);
the hook adds that file to the site under ``repo/`` (a Markdown file as a page, whose own links
are followed the same way; any other file as it is) and points the link there. A link to a
file that does not exist is left alone, so that MkDocs' strict build names it.
"""

from __future__ import annotations

import posixpath
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from docs import gallery, reference  # noqa: E402

PAGES = "docs/pages"
"""The site's own pages, as a folder of the repository."""
REPO = "repo"
"""Where the repository's other files go in the site."""
LINK = re.compile(r"(?P<open>\]\(|\bsrc=\")(?P<target>[^)\s\"#]+)(?P<anchor>#[^)\s\"]*)?")
"""A Markdown link's or an HTML image's target (and anchor)."""
GENERATED = re.compile(r"<!-- generated: (?P<name>[\w-]+) -->")
"""Where a page takes a generated section."""
SECTIONS = {
    "config-reference": reference.config_reference,
    "cli-reference": reference.cli_reference,
    "gallery": lambda: gallery.markdown(_gallery_entries()),
}

_state: dict[str, Any] = {}


def site_path(repo_path: str) -> str:
    """Where a repository file lies in the site: a page as itself, any other under ``repo/``."""
    if repo_path.startswith(PAGES + "/"):
        return repo_path[len(PAGES) + 1 :]
    return f"{REPO}/{repo_path}"


def repo_path(src_uri: str) -> str:
    """The repository file a site file comes from (the inverse of :func:`site_path`)."""
    if src_uri.startswith(REPO + "/"):
        return src_uri[len(REPO) + 1 :]
    return f"{PAGES}/{src_uri}"


def linked(text: str, page: str) -> list[str]:
    """The repository paths the relative links of ``text`` (the page at repository path
    ``page``) point to."""
    found = []
    for match in LINK.finditer(_without_code(text)):
        target = match["target"]
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            continue
        found.append(posixpath.normpath(posixpath.join(posixpath.dirname(page), target)))
    return found


def _without_code(text: str) -> str:
    """``text`` without its fenced code blocks and inline code (their brackets are no links)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def on_files(files: Any, config: Any) -> Any:
    """The repository files the pages link to (and those their Markdown links to, in turn),
    and the gallery's images, added to the site."""
    from mkdocs.structure.files import File, InclusionLevel

    todo = [repo_path(f.src_uri) for f in files.documentation_pages()]
    seen = set(todo)
    while todo:
        page = todo.pop()
        for target in linked((ROOT / page).read_text(errors="replace"), page):
            if target in seen or target.startswith("..") or not (ROOT / target).is_file():
                continue
            seen.add(target)
            if target.startswith(PAGES + "/"):
                continue
            file = File.generated(config, site_path(target), abs_src_path=str(ROOT / target))
            file.inclusion = InclusionLevel.NOT_IN_NAV  # reached by links, not the menu
            files.append(file)
            if target.endswith(".md"):
                todo.append(target)
    for entry in _gallery_entries():
        files.append(File.generated(config, entry.image, abs_src_path=str(entry.path)))
    return files


def _gallery_entries() -> list[gallery.Entry]:
    """The gallery's images, rendered once per build into a temporary folder."""
    if "gallery" not in _state:
        folder = Path(tempfile.mkdtemp(prefix="daliaug-gallery-"))
        _state["gallery"] = gallery.render(folder)
    return _state["gallery"]


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """The page's generated sections written in, and its links to repository files pointed at
    their place in the site."""
    markdown = GENERATED.sub(lambda m: SECTIONS[m["name"]]().strip(), markdown)
    here = repo_path(page.file.src_uri)
    own = posixpath.dirname(page.file.src_uri) or "."

    def relink(match: re.Match[str]) -> str:
        target = match["target"]
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            return match[0]
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(here), target))
        if resolved.startswith("..") or not (ROOT / resolved).is_file():
            return match[0]
        new = posixpath.relpath(site_path(resolved), own)
        return f"{match['open']}{new}{match['anchor'] or ''}"

    return _outside_code(markdown, lambda text: LINK.sub(relink, text))


def _outside_code(text: str, change: Any) -> str:
    """``change`` applied to the parts of ``text`` outside fenced code blocks."""
    parts = re.split(r"(^```.*?^```)", text, flags=re.S | re.M)
    return "".join(part if part.startswith("```") else change(part) for part in parts)
