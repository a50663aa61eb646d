"""The documentation site builds with --strict and shows what a user looks things up for.

One `mkdocs build --strict` per module (the same command `make docs` runs, offline,
notebooks rendered with their committed outputs, not executed); the tests read the HTML
it wrote. --strict turns every warning into a failed build: a broken cross-reference, a
nav entry without its page, a docstring griffe cannot parse.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import griffe
import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC_PATHS = [ROOT / "src", ROOT / "bridges/langchain/src", ROOT / "bridges/llamaindex/src"]

# package -> its reference page, relative to the site root
PAGES = {
    "agentkit.state.memory": "api/memory.html",
    "agentkit.kernel": "api/kernel.html",
    "agentkit.vector": "api/vector.html",
    "agentkit_langchain": "api/langchain.html",
    "agentkit_llamaindex": "api/llamaindex.html",
    "agentkit.interop": "api/interop.html",
    "agentkit.testing": "api/testing.html",
}
# Exported lazily (module __getattr__), so documented under their defining module.
LAZY = {
    "agentkit.vector.SQLiteVectorStore": "agentkit.vector.sqlite.SQLiteVectorStore",
    "agentkit.vector.PostgresVectorStore": "agentkit.vector.postgres.PostgresVectorStore",
    "agentkit.vector.SentenceTransformerEmbedder":
        "agentkit.vector.sentence.SentenceTransformerEmbedder",
    "agentkit.vector.OnnxEmbedder": "agentkit.vector.onnx_embedder.OnnxEmbedder",
}

_HEADING = re.compile(r"<h([1-6])\b[^>]*\bid=\"([^\"]+)\"[^>]*>(.*?)</h\1>", re.S)
_SIGNATURE = re.compile(r'<div class="doc-signature highlight">(.*?)</div>', re.S)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def _page(site: Path, rel: str) -> str:
    path = site / rel
    assert path.is_file(), f"{rel} is missing from the built site"
    return path.read_text(encoding="utf-8")


def _object_html(page: str, anchor: str) -> str:
    """The HTML of one documented object: its heading up to the next same-level heading."""
    match = re.search(rf'<h([1-6]) id="{re.escape(anchor)}"', page)
    assert match, f"no entry {anchor!r} on the page"
    level = match.group(1)
    end = re.search(rf'<h[1-{level}] id="', page[match.end():])
    return page[match.start(): match.end() + end.start() if end else len(page)]


def _exports() -> list[tuple[str, str]]:
    names = []
    for package in PAGES:
        module = importlib.import_module(package)
        names += [(package, name) for name in module.__all__]
    return names


def test_every_export_has_an_entry_on_its_packages_page(site: Path) -> None:
    exports = _exports()
    assert len(exports) > 60
    for package, name in exports:
        anchor = LAZY.get(f"{package}.{name}", f"{package}.{name}")
        assert f'id="{anchor}"' in _page(site, PAGES[package]), anchor


def test_composite_memory_shows_dedupe_and_its_default(site: Path) -> None:
    entry = _object_html(_page(site, "api/memory.html"), "agentkit.state.memory.CompositeMemory")
    signature = re.sub(r"<[^>]+>", "", _SIGNATURE.search(entry).group(1))  # type: ignore[union-attr]
    assert re.search(r'dedupe:\s*DedupeMode \| None = "id"', signature), signature
    assert re.search(r'on_error:\s*OnErrorPolicy = "raise"', signature), signature
    # and the parameter is explained, not only listed
    assert re.search(r"<code>dedupe</code>", entry)


def test_memory_item_in_a_signature_links_to_its_entry(site: Path) -> None:
    memory = _page(site, "api/memory.html")
    assert 'id="agentkit.state.memory.MemoryItem"' in memory
    query = _object_html(memory, "agentkit.state.memory.MemorySource.query")
    assert 'href="#agentkit.state.memory.MemoryItem"' in _SIGNATURE.search(query).group(1)  # type: ignore[union-attr]
    # across pages: a bridge's signature links back to the memory page's anchor
    for rel, anchor in [("api/langchain.html", "agentkit_langchain.from_document"),
                        ("api/llamaindex.html", "agentkit_llamaindex.from_node")]:
        signature = _SIGNATURE.search(_object_html(_page(site, rel), anchor)).group(1)  # type: ignore[union-attr]
        hrefs = re.findall(r'href="([^"]+)"[^>]*>MemoryItem<', signature)
        assert hrefs, f"{anchor}: MemoryItem is not a link"
        target, _, fragment = hrefs[0].partition("#")
        assert f'id="{fragment}"' in (site / "api" / target).read_text(encoding="utf-8")


@pytest.mark.parametrize(("rel", "package"), [("api/langchain.html", "agentkit_langchain"),
                                              ("api/llamaindex.html", "agentkit_llamaindex")])
def test_each_bridges_retriever_has_its_page_with_its_keywords(
    site: Path, rel: str, package: str
) -> None:
    entry = _object_html(_page(site, rel), f"{package}.AgentkitRetriever")
    text = re.sub(r"<[^>]+>", "", entry)
    for keyword in ("memory", "k", "where", "ctx"):
        assert f'id="{package}.AgentkitRetriever.{keyword}"' in entry, keyword
    assert re.search(r"\bk:\s*int = 4\b", text)


def test_reference_pages_open_with_classes_and_keep_constants_last(site: Path) -> None:
    # A reader comes for the classes: a page must not open with module constants.
    by_page: dict[str, list[tuple[int, str]]] = {}
    for package, name in _exports():
        anchor = LAZY.get(f"{package}.{name}", f"{package}.{name}")
        page = _page(site, PAGES[package])
        by_page.setdefault(PAGES[package], []).append((page.index(f'id="{anchor}"'), name))
    for rel, entries in by_page.items():
        order = [name for _, name in sorted(entries)]
        package = next(p for p, r in PAGES.items() if r == rel)
        module = importlib.import_module(package)
        assert inspect.isclass(getattr(module, order[0])), f"{rel} opens with {order[0]}"
        classes = [i for i, n in enumerate(order) if inspect.isclass(getattr(module, n))]
        constants = [i for i, n in enumerate(order) if re.fullmatch(r"[A-Z][A-Z0-9_]+", n)]
        assert not constants or min(constants) > max(classes), f"{rel}: {order}"


def test_agentkit_embeddings_names_the_embedder_protocol(site: Path) -> None:
    entry = _object_html(_page(site, "api/langchain.html"), "agentkit_langchain.AgentkitEmbeddings")
    signature = _SIGNATURE.search(entry).group(1)  # type: ignore[union-attr]
    assert "Any" not in re.sub(r"<[^>]+>", "", signature)
    assert 'href="vector.html#agentkit.vector.Embedder">Embedder<' in signature, signature


def test_no_private_name_is_a_heading_anywhere(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 15
    for path in pages:
        for _level, anchor, inner in _HEADING.findall(path.read_text(encoding="utf-8")):
            name = anchor.rsplit(".", 1)[-1]
            shown = re.sub(r"<[^>]+>|&para;|\s", "", inner)
            assert not name.startswith("_"), f"{path.relative_to(site)}: heading {anchor}"
            assert not shown.startswith("_"), f"{path.relative_to(site)}: heading {shown}"


def test_no_docstring_shows_raw_sphinx_markup(site: Path) -> None:
    # Docstrings are Google style rendered as Markdown: an RST role (:func:`x`) would
    # reach the reader as literal text.
    role = re.compile(r":(?:func|class|meth|attr|exc|data|mod):<code>[^<]*")
    for rel in sorted(set(PAGES.values())):
        leftovers = role.findall(_page(site, rel))
        assert not leftovers, f"{rel}: {leftovers}"


def test_guides_and_notebooks_are_pages(site: Path) -> None:
    for guide in sorted((ROOT / "docs").glob("*.md")):
        assert (site / f"{guide.stem}.html").is_file(), guide.name
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        page = _page(site, f"notebooks/{notebook.stem}.html")
        # rendered, code cells included, not just copied
        assert "jp-Cell" in page and "import" in page, notebook.name


def test_notebooks_are_published_with_their_outputs(site: Path) -> None:
    # The notebooks say "after every step we print...": the page must show those prints
    # (committed with the notebook, kept current by tests/test_notebooks.py), and no
    # code cell may be shown unexecuted.
    import html

    import nbformat

    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        page = _page(site, f"notebooks/{notebook.stem}.html")
        body = page[page.index("<body") :]
        prompts = re.findall(r'<div class="jp-InputPrompt[^"]*"[^>]*>(.*?)</div>', body, re.S)
        shown = [re.sub(r"<[^>]+>", "", p).replace("\xa0", " ").strip() for p in prompts]
        assert "In [ ]:" not in shown, f"{notebook.name} is published unexecuted"
        printed = re.findall(r"jp-OutputArea-output[^>]*>\s*<pre>(.*?)</pre>", body, re.S)
        text = html.unescape(re.sub(r"<[^>]+>", "", "".join(printed)))
        nb = nbformat.read(notebook, as_version=4)  # type: ignore[no-untyped-call]
        streams = [
            out.text
            for cell in nb.cells
            if cell.cell_type == "code"
            for out in cell.get("outputs", [])
            if out.output_type == "stream"
        ]
        assert streams, f"{notebook.name} has no outputs committed"
        for stream in streams:
            assert stream.strip() in text, f"{notebook.name}: {stream[:80]!r} is not on the page"


def test_every_export_has_its_own_docstring() -> None:
    loader = griffe.GriffeLoader(search_paths=[str(p) for p in SRC_PATHS])
    for package in PAGES:
        loader.load(package.split(".")[0])
    loader.resolve_aliases(implicit=False, external=False)
    missing = []
    for package, name in _exports():
        path = LAZY.get(f"{package}.{name}", f"{package}.{name}")
        obj = loader.modules_collection[path]
        if obj.is_alias:
            obj = obj.final_target
        if not (obj.docstring and obj.docstring.value.strip()):
            missing.append(path)
    assert not missing, f"exported without a docstring: {missing}"


def _undocumented_members(cls: type) -> list[str]:
    """Public methods and properties the class itself defines, without a docstring."""
    missing = []
    for attr, value in vars(cls).items():
        if attr.startswith("_"):
            continue
        if isinstance(value, property):
            target = value.fget
        elif isinstance(value, (classmethod, staticmethod)):
            target = value.__func__
        elif inspect.isfunction(value):
            target = value
        else:
            continue
        if not (getattr(target, "__doc__", None) or "").strip():
            missing.append(f"{cls.__module__}.{cls.__qualname__}.{attr}")
    return missing


def test_every_public_method_of_an_exported_class_has_a_docstring() -> None:
    # The reference lists each class's members; a blank one tells the reader nothing.
    missing = []
    for package, name in _exports():
        obj = getattr(importlib.import_module(package), name)
        if inspect.isclass(obj):
            missing += _undocumented_members(obj)
    assert not missing, f"public members without a docstring: {missing}"


def test_the_member_check_notices_a_blank_method_and_property() -> None:
    class Sample:
        def documented(self) -> None:
            """Here."""

        def blank(self) -> None:
            pass

        @property
        def blank_property(self) -> int:
            return 1

        def _private(self) -> None:
            pass

    found = _undocumented_members(Sample)
    assert [m.rsplit(".", 1)[1] for m in found] == ["blank", "blank_property"]




# One defect of each kind a --strict build must refuse, planted in one small site.
_BROKEN_PACKAGE = '''"""A package whose docstrings do not render."""

__all__ = ["f", "g"]


def f(a: int) -> int:
    """Double it.

    Args:
        b: There is no b.
    """
    return 2 * a


def g(a: int) -> int:
    """Triple it; see [the other one][broken.nowhere]."""
    return 3 * a
'''


def test_the_site_config_refuses_what_would_not_render(tmp_path: Path) -> None:
    # The same mkdocs.yml (theme, plugins, handler options) over a one-page site that
    # documents a package: each planted defect must be reported, and fail the build.
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    package = tmp_path / "src" / "broken"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(_BROKEN_PACKAGE)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Broken\n\n::: broken\n")
    for plugin in config["plugins"]:
        if isinstance(plugin, dict) and "mkdocstrings" in plugin:
            plugin["mkdocstrings"]["handlers"]["python"]["paths"] = [str(tmp_path / "src")]
    config["nav"] = [{"Home": "index.md"}, {"Gone": "gone.md"}]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=tmp_path, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode != 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("WARNING")]
    assert any("Parameter 'b' does not appear" in w for w in warnings), proc.stderr
    assert any("broken.nowhere" in w for w in warnings), proc.stderr
    assert any("gone.md" in w for w in warnings), proc.stderr
