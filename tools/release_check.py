"""Release check: the three distributions as a user gets them, tried from outside the repo.

Builds each sdist and wheel (`python -m build`: the wheel is built from the sdist, so a file
the sdist forgot fails here), runs `twine check --strict`, reads the artifacts (license file,
metadata, the package page), installs the wheels into a fresh virtual environment in a
temporary folder and, with that folder as the working directory and nothing of the
repository on `sys.path`, runs the examples, every python block of each package page and
the CLI. Any failure raises `ReleaseCheckError` naming what broke.

`make release-check` runs it and keeps the checked artifacts in `dist/` for upload;
`tests/test_release.py` runs it in the test suite. The venv gets no `embeddings` extra (no
torch): the examples use `HashingEmbedder` and the CLI runs with `--hashing`. Network: only
the package registry, for the wheels' dependencies.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import email.parser
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from subprocess import CompletedProcess

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Distribution:
    """One distribution this repository releases."""

    name: str  # as on the package index
    project: Path  # the folder holding its pyproject.toml (and its LICENSE)
    module: str  # what `import` names
    license: str = "MIT"  # its SPDX license expression

    @property
    def stem(self) -> str:
        """The artifact file-name prefix (`agentkit_memory`)."""
        return self.name.replace("-", "_")


# Another distribution (a model package, say) is one more line here: it is then built,
# checked and installed with the others.
DISTRIBUTIONS = (
    Distribution("agentkit-memory", ROOT, "agentkit"),
    Distribution("agentkit-langchain", ROOT / "bridges/langchain", "agentkit_langchain"),
    Distribution("agentkit-llamaindex", ROOT / "bridges/llamaindex", "agentkit_llamaindex"),
)
CORE = DISTRIBUTIONS[0]

# What a new user runs first, from the installed wheels (the package pages' python blocks
# are added to these; identical code runs once).
EXAMPLES = (
    "examples/quickstart.py",
    "examples/langchain_retriever.py",
    "examples/llamaindex_retriever.py",
)

# The CLI runs once per entry: (the embedder flags for `ingest`, the agentkit-memory extras
# that embedder needs). `--hashing` needs no model, which keeps torch out of this venv.
# The ONNX default embedder is one more line here, e.g. ((), ("embeddings",)) or, if it
# becomes a plain dependency, ((), ()).
CLI_EMBEDDERS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ((("--hashing",), ()),)

_NOTES = {
    "refunds.md": "# Refunds\n\nRefunds are issued within 14 days of the return arriving.\n",
    "shipping.md": "# Shipping\n\nOrders ship from the Berlin warehouse every Monday.\n",
    "support.md": "# Support hours\n\nThe support desk answers from 9 to 17, Monday to Friday.\n",
}
_CLI_QUERY = ("when are refunds issued", "refunds.md")  # the query, and the file it must find

# Things a package page must not say: it is read on the package index, not in a checkout.
_MAKE = re.compile(r"\bmake (?:demo|test|bench|lint|docs|release-check|clean)\b")
_LINK = re.compile(
    r"\]\(\s*<?([^)\s>]+)|^\s*\[[^\]]+\]:\s*(\S+)|\b(?:src|href)=[\"']([^\"']+)", re.M
)
# Extras no distribution publishes: what only this repository needs is a dependency group.
DEV_EXTRAS = frozenset({"test", "tests", "bench", "docs", "dev", "lint"})
# Folders that only work inside the whole repository; an sdist never ships them.
_REPO_ONLY = {"tests", "bench", "notebooks", "docs", "examples", "bridges", "tools", ".venv"}
_REPO_PATH = re.compile(r"`(?:\.venv|src|bridges|notebooks|examples|bench|tests|docs|tools)/")
# Side by side: builds and example runs wait on I/O and imports more than on each other.
_WORKERS = 3
_ABSOLUTE = ("https://", "http://", "mailto:", "#")
_PYTHON_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


class ReleaseCheckError(Exception):
    """A built artifact, or what a user does with it, is not fit to release."""


@dataclass
class Report:
    """What the check did: seconds per step, and the output of everything it ran."""

    seconds: dict[str, float] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)  # label -> stdout
    page_blocks: dict[str, int] = field(default_factory=dict)  # distribution -> blocks run
    artifacts: list[Path] = field(default_factory=list)


def page_problems(text: str) -> list[str]:
    """What in a package page only makes sense inside a checkout of the repository."""
    problems = [f"a make command: {m.group(0)!r}" for m in _MAKE.finditer(text)]
    if "../" in text:
        problems.append("a parent-relative path ('../')")
    for match in _LINK.finditer(text):
        target = next(group for group in match.groups() if group)
        if not target.startswith(_ABSOLUTE):
            problems.append(f"a relative link: {target!r}")
    problems += [f"a repository path: {m.group(0)!r}" for m in _REPO_PATH.finditer(text)]
    return problems


def python_blocks(text: str) -> list[str]:
    """The fenced python code blocks of a markdown page, in order."""
    return list(_PYTHON_BLOCK.findall(text))


def run(dist_dir: Path, *, work_root: Path | None = None, log: bool = True) -> Report:
    """Build into ``dist_dir``, check, install into a venv under ``work_root`` and run there.

    ``work_root`` (default: a new temporary folder) must lie outside the repository; a
    temporary default is removed afterwards.
    """
    if work_root is not None and work_root.resolve().is_relative_to(ROOT):
        raise ReleaseCheckError(f"{work_root} is inside the repository; the check runs outside it")
    report = Report()
    with _work_folder(work_root) as work:
        if work.resolve().is_relative_to(ROOT):  # a TMPDIR inside the checkout
            raise ReleaseCheckError(f"{work} is inside the repository; the check runs outside it")
        with _step(report, "build", log):
            artifacts = _build(dist_dir)
        report.artifacts = [path for pair in artifacts.values() for path in pair]
        with _step(report, "twine check", log):
            _check(
                [sys.executable, "-m", "twine", "check", "--strict", *map(str, report.artifacts)]
            )
        with _step(report, "inspect artifacts", log):
            core_version = _version_of(artifacts[CORE.name][0])
            pages = {d.name: _inspect(d, *artifacts[d.name], core_version) for d in DISTRIBUTIONS}
        with _step(report, "fresh venv + install", log):
            python = _install(work / "venv", {d.name: artifacts[d.name][0] for d in DISTRIBUTIONS})
        home = work / "home"
        home.mkdir()
        with _step(report, "installed versions", log):
            _check_installed(
                python, home, {d.name: _version_of(artifacts[d.name][0]) for d in DISTRIBUTIONS}
            )
        with _step(report, "examples, package pages and the CLI", log):
            with concurrent.futures.ThreadPoolExecutor(max_workers=_WORKERS) as pool:
                cli = pool.submit(_run_cli, python, home)
                scripts = {
                    label: pool.submit(_run_script, python, home, label, code)
                    for label, code in _scripts(pages, report).items()
                }
                report.outputs.update({label: job.result() for label, job in scripts.items()})
                report.outputs.update(cli.result())
    if log:
        total = sum(report.seconds.values())
        print(f"release check passed in {total:.1f} s; artifacts in {dist_dir}", flush=True)
    return report


@contextlib.contextmanager
def _work_folder(work_root: Path | None) -> Iterator[Path]:
    if work_root is not None:
        work_root.mkdir(parents=True, exist_ok=True)
        if any(work_root.iterdir()):
            raise ReleaseCheckError(f"{work_root} is not empty; the check starts from nothing")
        yield work_root
        return
    with tempfile.TemporaryDirectory(prefix="agentkit-release-") as tmp:
        yield Path(tmp)


@contextlib.contextmanager
def _step(report: Report, name: str, log: bool) -> Iterator[None]:
    start = time.perf_counter()
    yield
    report.seconds[name] = time.perf_counter() - start
    if log:
        print(f"  {name}: {report.seconds[name]:.1f} s", flush=True)


def _check(
    cmd: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
) -> str:
    """Run ``cmd``; its stdout, or ReleaseCheckError with everything it printed."""
    return _run(cmd, cwd=cwd, env=env, timeout=timeout).stdout


def _run(
    cmd: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
) -> CompletedProcess[str]:
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        raise ReleaseCheckError(
            f"{' '.join(map(str, cmd))} exited {proc.returncode} (in {cwd or os.getcwd()})\n"
            f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
        )
    return proc


def _build(dist_dir: Path) -> dict[str, tuple[Path, Path]]:
    """Each distribution's (wheel, sdist), built afresh into ``dist_dir``.

    The builds run side by side: each waits mostly on its isolated build environment.
    """
    dist_dir.mkdir(parents=True, exist_ok=True)
    for dist in DISTRIBUTIONS:
        for old in dist_dir.glob(f"{dist.stem}-*"):  # stale artifacts of ours, nothing else
            old.unlink()
    # No --sdist/--wheel: build makes the sdist, then the wheel from the unpacked sdist.
    _parallel(
        [
            [sys.executable, "-m", "build", "--outdir", str(dist_dir), str(dist.project)]
            for dist in DISTRIBUTIONS
        ]
    )
    built = {}
    for dist in DISTRIBUTIONS:
        wheels = list(dist_dir.glob(f"{dist.stem}-*.whl"))
        sdists = list(dist_dir.glob(f"{dist.stem}-*.tar.gz"))
        if len(wheels) != 1 or len(sdists) != 1:
            raise ReleaseCheckError(
                f"{dist.name}: expected one wheel and one sdist, got "
                f"{[p.name for p in wheels + sdists]}"
            )
        built[dist.name] = (wheels[0], sdists[0])
    return built


def _parallel(cmds: Sequence[Sequence[str]]) -> list[str]:
    """`_check` each command, side by side; their stdouts in order, or the first failure."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=_WORKERS) as pool:
        futures = [pool.submit(_check, cmd) for cmd in cmds]
        return [future.result() for future in futures]


def _version_of(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def _inspect(dist: Distribution, wheel: Path, sdist: Path, core_version: str) -> str:
    """Check what is inside the artifacts; return the package page (the long description)."""
    version = _version_of(wheel)
    info = f"{dist.stem}-{version}.dist-info"
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        tops = {name.split("/")[0] for name in names}
        if tops != {dist.module, info}:
            raise ReleaseCheckError(
                f"{wheel.name} holds {sorted(tops)}, expected only {dist.module}/ and {info}/"
            )
        if f"{dist.module}/py.typed" not in names:
            raise ReleaseCheckError(f"{wheel.name} lacks {dist.module}/py.typed")
        license_name, license_file = f"{info}/licenses/LICENSE", dist.project / "LICENSE"
        if license_name not in names or zf.read(license_name) != license_file.read_bytes():
            raise ReleaseCheckError(
                f"{wheel.name}: {license_name} is missing or is not {license_file}"
            )
        meta = email.parser.Parser().parsestr(zf.read(f"{info}/METADATA").decode("utf-8"))
    with tarfile.open(sdist) as tf:
        members = {m.name for m in tf.getmembers()}
    for needed in ("LICENSE", "PKG-INFO", "pyproject.toml"):
        if f"{dist.stem}-{version}/{needed}" not in members:
            raise ReleaseCheckError(f"{sdist.name} lacks {needed}")
    stray = sorted({m.split("/")[1] for m in members if m.count("/") >= 1} & _REPO_ONLY)
    if stray:
        raise ReleaseCheckError(f"{sdist.name} ships repository folders {stray}")
    _check_metadata(dist, meta, version, core_version)
    page = meta.get_payload()
    assert isinstance(page, str)
    problems = page_problems(page)
    if problems:
        raise ReleaseCheckError(f"{dist.name}'s package page: " + "; ".join(problems))
    return page


def _check_metadata(dist: Distribution, meta: Message, version: str, core_version: str) -> None:
    import trove_classifiers

    def fail(what: str) -> None:
        raise ReleaseCheckError(f"{dist.name} {version} metadata: {what}")

    if meta["License-Expression"] != dist.license:
        fail(f"License-Expression is {meta['License-Expression']!r}, expected {dist.license!r}")
    if meta["Description-Content-Type"] != "text/markdown":
        fail("the package page is not declared as markdown")
    classifiers = meta.get_all("Classifier") or []
    if not classifiers:
        fail("no classifiers")
    unknown = [c for c in classifiers if c not in trove_classifiers.classifiers]
    if unknown:
        fail(f"classifiers the package index does not know: {unknown}")
    urls = dict(url.split(", ", 1) for url in meta.get_all("Project-URL") or [])
    if not {"Homepage", "Repository", "Changelog"} <= urls.keys():
        fail(f"project URLs {sorted(urls)} lack Homepage, Repository or Changelog")
    extras = set(meta.get_all("Provides-Extra") or [])
    dev = extras & DEV_EXTRAS
    if dev:
        fail(f"publishes development extras {sorted(dev)}")
    requires = [Requirement(r) for r in meta.get_all("Requires-Dist") or []]
    for req in requires:
        if req.name == CORE.name and not compatible(req, core_version):
            fail(f"{req} must hold {CORE.name} {core_version} and have an upper bound")


def compatible(req: Requirement, version: str) -> bool:
    """``req`` admits ``version`` and caps what is to come (a 0.x minor may break the API)."""
    capped = any(spec.operator in {"<", "<=", "~=", "=="} for spec in req.specifier)
    return capped and req.specifier.contains(version)


def _install(venv: Path, wheels: Mapping[str, Path]) -> Path:
    """A fresh venv holding the wheels (and their dependencies from the index); its python.

    The venv is made without pip; this interpreter's pip installs into it (`pip --python`),
    which is faster than bootstrapping a pip into every new venv.
    """
    _check([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    extras = sorted({extra for _, needs in CLI_EMBEDDERS for extra in needs})
    requirements = [
        str(path) + (f"[{','.join(extras)}]" if name == CORE.name and extras else "")
        for name, path in wheels.items()
    ]
    # Local wheel files, named directly: a same-named release on the index never stands in.
    _check(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-compile",
            "--quiet",
            *requirements,
        ],
        env=_clean_env(),
    )
    return python


def _clean_env() -> dict[str, str]:
    """This process's environment minus whatever would put the repository on sys.path."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV"}
    }
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _check_installed(python: Path, home: Path, versions: Mapping[str, str]) -> None:
    """The venv imports each package from its own site-packages, at the built version."""
    probe = (
        "import importlib, importlib.metadata as md, json, sys\n"
        f"dists = {[(d.name, d.module) for d in DISTRIBUTIONS]!r}\n"
        "out = {'path': sys.path, 'mods': {}}\n"
        "for name, mod in dists:\n"
        "    m = importlib.import_module(mod)\n"
        "    out['mods'][name] = [m.__file__, m.__version__, md.version(name)]\n"
        "print(json.dumps(out))\n"
    )
    found = json.loads(_check([str(python), "-c", probe], cwd=home, env=_clean_env()))
    leaked = [p for p in found["path"] if p and Path(p).resolve().is_relative_to(ROOT)]
    if leaked:
        raise ReleaseCheckError(f"the repository is on the venv's sys.path: {leaked}")
    venv = python.parent.parent.resolve()
    for name, (file, module_version, dist_version) in found["mods"].items():
        if not Path(file).resolve().is_relative_to(venv):
            raise ReleaseCheckError(f"{name} was imported from {file}, not from the venv")
        if not module_version == dist_version == versions[name]:
            raise ReleaseCheckError(
                f"{name}: __version__ {module_version}, installed "
                f"{dist_version}, built {versions[name]}"
            )


def _scripts(pages: Mapping[str, str], report: Report) -> dict[str, str]:
    """label -> code: the examples, then each page's python blocks; identical code once."""
    by_code: dict[str, str] = {}
    for rel in EXAMPLES:
        by_code.setdefault((ROOT / rel).read_text(encoding="utf-8"), rel)
    for name, page in pages.items():
        blocks = python_blocks(page)
        report.page_blocks[name] = len(blocks)
        for i, code in enumerate(blocks, 1):
            by_code.setdefault(code, f"{name} package page, python block {i}")
    return {label: code for code, label in by_code.items()}


def _run_script(python: Path, home: Path, label: str, code: str) -> str:
    script = home / (re.sub(r"\W+", "_", label).strip("_") + ".py")
    script.write_text(code, encoding="utf-8")
    try:
        return _check([str(python), script.name], cwd=home, env=_clean_env(), timeout=300)
    except ReleaseCheckError as exc:
        raise ReleaseCheckError(f"{label}, run from the installed wheels:\n{exc}") from None


def _run_cli(python: Path, home: Path) -> dict[str, str]:
    """`ingest` a folder of notes, then `query` it, once per CLI_EMBEDDERS entry."""
    notes = home / "notes"
    notes.mkdir()
    for name, text in _NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    cli = python.parent / ("agentkit-memory.exe" if os.name == "nt" else "agentkit-memory")
    outputs = {}
    for i, (flags, _) in enumerate(CLI_EMBEDDERS, 1):
        store = str(home / f"memory-{i}.db")
        label = f"cli {' '.join(flags) or '(default embedder)'}"
        ingest = _run(
            [str(cli), "--store", store, *flags, "ingest", "notes"], cwd=home, env=_clean_env()
        ).stderr  # its summary is a progress line
        # No embedder flag: the store remembers the one it was built with.
        text, expected = _CLI_QUERY
        answer = _check(
            [str(cli), "--store", store, "query", text, "-k", "1", "--json"],
            cwd=home,
            env=_clean_env(),
        )
        results = json.loads(answer)["results"]
        if len(results) != 1 or not str(results[0]["path"]).endswith(expected):
            raise ReleaseCheckError(
                f"{label}: query {text!r} -k 1 should find {expected}, "
                f"got {[r['path'] for r in results]}"
            )
        outputs[f"{label} ingest"] = ingest
        outputs[f"{label} query"] = answer
    return outputs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--dist",
        type=Path,
        default=ROOT / "dist",
        help="where the sdists and wheels go (default: dist/)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        metavar="DIR",
        help="make the venv in DIR (new or empty, outside the repository) and keep it",
    )
    args = parser.parse_args(argv)
    try:
        run(args.dist.resolve(), work_root=args.keep and args.keep.resolve())
    except ReleaseCheckError as exc:
        print(f"release check FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
