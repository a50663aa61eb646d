"""A release a user could install: the three distributions' metadata, and the wheels
themselves installed into a fresh venv outside the repository and used from there.

The end-to-end test is `make release-check` (tools/release_check.py) run inside the suite;
the others read the sources and fail in a second, before anything is built.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> ModuleType:
    """tools/release_check.py, loaded by path (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "agentkit_release_check", ROOT / "tools/release_check.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


TOOL = _tool()
DISTS = TOOL.DISTRIBUTIONS
CORE = TOOL.CORE


def _pyproject(dist: Any) -> dict[str, Any]:
    with (dist.project / "pyproject.toml").open("rb") as fh:
        return tomllib.load(fh)["project"]  # type: ignore[no-any-return]


def _version(dist: Any) -> str:
    return str(importlib.import_module(dist.module).__version__)


@pytest.mark.parametrize("dist", DISTS, ids=lambda d: d.name)
def test_package_page_is_written_for_the_index(dist: Any) -> None:
    """Its own page (not the repository README), nothing that needs a checkout, and code
    to run (tools/release_check.py runs every python block from the installed wheels)."""
    readme = _pyproject(dist)["readme"]
    assert readme != "README.md", "the package page must not be the repository's README"
    page = (dist.project / readme).read_text(encoding="utf-8")
    assert TOOL.page_problems(page) == []
    assert TOOL.python_blocks(page), f"{dist.name}'s package page shows no python code"


def test_page_problems_names_what_only_works_in_a_checkout() -> None:
    page = (
        "Run `make demo`, read [the CLI](docs/cli.md) and ![plot](bench/results.png),\n"
        "eval ../shared/data/scifact, see `notebooks/x.ipynb`.\n"
        "[ref]: CHANGELOG.md\n"
        "Fine: [PyPI](https://pypi.org/project/agentkit-memory/), [up](#install).\n"
    )
    problems = TOOL.page_problems(page)
    assert any("make demo" in p for p in problems)
    assert any("'../'" in p for p in problems)
    relative = sorted(p for p in problems if p.startswith("a relative link"))
    assert relative == [
        "a relative link: 'CHANGELOG.md'",
        "a relative link: 'bench/results.png'",
        "a relative link: 'docs/cli.md'",
    ]
    assert any("`notebooks/" in p for p in problems)
    assert len(problems) == 6


@pytest.mark.parametrize("dist", DISTS, ids=lambda d: d.name)
def test_license_classifiers_urls_and_user_extras(dist: Any) -> None:
    project = _pyproject(dist)
    assert project["license"] == dist.license == "MIT"
    assert project["license-files"] == ["LICENSE"]
    # Each distribution ships its own copy (a license file cannot come from outside its
    # project folder); the copies must stay the repository's license.
    assert (dist.project / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    assert project["classifiers"] and project["urls"].keys() >= {"Homepage", "Changelog"}
    extras = set(project.get("optional-dependencies", {}))
    assert not extras & TOOL.DEV_EXTRAS, (
        "development dependencies go in [dependency-groups], which are never published"
    )


@pytest.mark.parametrize("dist", DISTS, ids=lambda d: d.name)
def test_version_lives_in_one_place(dist: Any) -> None:
    """`__version__` is exported and is what the build reads: no second literal."""
    project = _pyproject(dist)
    assert "version" not in project and "version" in project["dynamic"]
    with (dist.project / "pyproject.toml").open("rb") as fh:
        dynamic = tomllib.load(fh)["tool"]["setuptools"]["dynamic"]
    assert dynamic["version"] == {"attr": f"{dist.module}.__version__"}
    Version(_version(dist))


def test_versions_move_together_and_the_changelog_has_them() -> None:
    versions = {dist.name: _version(dist) for dist in DISTS}
    assert len(set(versions.values())) == 1, f"released together under one version: {versions}"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    version = versions[CORE.name]
    assert re.search(rf"^## \[{re.escape(version)}\]", changelog, re.M), (
        f"CHANGELOG.md has no section for {version}"
    )


@pytest.mark.parametrize("dist", [d for d in DISTS if d is not CORE], ids=lambda d: d.name)
def test_bridges_pin_one_minor_series_of_the_core(dist: Any) -> None:
    pins = [Requirement(r) for r in _pyproject(dist)["dependencies"]]
    (pin,) = [r for r in pins if r.name == CORE.name]
    core = Version(_version(CORE))
    assert TOOL.compatible(pin, str(core))
    assert not pin.specifier.contains(f"{core.major}.{core.minor + 1}.0"), (
        f"{pin} admits the next minor release, which may change the API"
    )


def test_wheels_install_and_run_outside_the_repository(tmp_path: Path) -> None:
    """Build, twine check, install into a fresh venv in a temporary folder (outside the
    repo; removed afterwards: it holds ~350 MB), then run the examples, the package pages'
    code and the CLI from there."""
    report = TOOL.run(tmp_path / "dist", log=False)
    print("release check seconds:", {k: round(v, 1) for k, v in report.seconds.items()})

    built = sorted(p.name for p in report.artifacts)
    for dist in DISTS:
        version = _version(dist)
        assert f"{dist.stem}-{version}-py3-none-any.whl" in built
        assert f"{dist.stem}-{version}.tar.gz" in built
    assert all(report.page_blocks[dist.name] >= 1 for dist in DISTS)

    out = report.outputs
    assert out["examples/quickstart.py"].strip()
    for example in ("examples/langchain_retriever.py", "examples/llamaindex_retriever.py"):
        # Both sources answer, each item tagged with where it came from.
        assert "[faq] Refunds are issued within 14 days" in out[example]
        assert "[notes] Acme's order 42 was refunded on Friday." in out[example]
    core_page = out[f"{CORE.name} package page, python block 1"]
    assert "[kb] Refunds are issued within 14 days." in core_page
    assert "globex sees: []" in core_page
    assert "a call without a tenant is refused" in core_page
    assert f"{len(TOOL._NOTES)} written" in out["cli --hashing ingest"]
    assert '"path": "notes/refunds.md"' in out["cli --hashing query"]


def _metadata(**overrides: Any) -> Any:
    """A bridge's METADATA that passes, with the named fields replaced."""
    from email.message import Message

    fields: dict[str, list[str]] = {
        "License-Expression": ["MIT"],
        "Description-Content-Type": ["text/markdown"],
        "Classifier": ["Typing :: Typed"],
        "Project-URL": [
            "Homepage, https://example.org",
            "Repository, https://example.org/src",
            "Changelog, https://example.org/changes",
        ],
        "Provides-Extra": ["langgraph"],
        "Requires-Dist": ["agentkit-memory<0.2,>=0.1", "langchain-core<2,>=1.0"],
        **overrides,
    }
    meta = Message()
    for key, values in fields.items():
        for value in values:
            meta[key] = value
    return meta


def test_metadata_check_passes_a_sound_bridge() -> None:
    TOOL._check_metadata(DISTS[1], _metadata(), "0.1.0", "0.1.0")


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"License-Expression": ["Apache-2.0"]}, "License-Expression"),
        ({"Classifier": ["Typing :: Typo"]}, "Typing :: Typo"),
        ({"Project-URL": ["Homepage, https://example.org"]}, "project URLs"),
        ({"Provides-Extra": ["langgraph", "test"]}, "development extras ['test']"),
        ({"Requires-Dist": ["agentkit-memory>=0.1"]}, "agentkit-memory>=0.1"),
        ({"Requires-Dist": ["agentkit-memory<0.1"]}, "agentkit-memory<0.1"),
    ],
)
def test_metadata_check_names_what_is_wrong(overrides: dict[str, list[str]], named: str) -> None:
    with pytest.raises(TOOL.ReleaseCheckError, match=re.escape(named)):
        TOOL._check_metadata(DISTS[1], _metadata(**overrides), "0.1.0", "0.1.0")
