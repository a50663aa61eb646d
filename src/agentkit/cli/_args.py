"""The command line's grammar: argparse, with every mistake reported on one line.

A mistyped subcommand, choice or flag gets the nearest real one suggested ("did you
mean --lexical?"), drawn from the parser's own choices and usage, so the suggestion
can only name something that exists (argparse has no ``suggest_on_error`` before 3.14).
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Mapping
from typing import NoReturn

from agentkit import __version__
from agentkit._store_path import DEFAULT_STORE_PATH, default_store_path
from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgument

PROG = "agentkit-memory"


class UsageError(InvalidArgument):
    """A command line that cannot be run; printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    # The subcommands by name (set on the top-level parser), for suggesting their flags.
    commands: Mapping[str, argparse.ArgumentParser] | None = None

    # argparse prints the whole usage block and exits; we want one line and our own exit.
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}{_choice_hint(message)} (see {self.prog} --help)")


_INVALID_CHOICE = re.compile(r"invalid choice: (['\"]?)(?P<word>.*?)\1 \(choose from (?P<all>.*)\)")
# A flag as usage prints it: "[-k K]", "[--dense | --lexical]", "--tokens FILE".
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def _did_you_mean(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _choice_hint(message: str) -> str:
    """For argparse's "invalid choice" message: the nearest of the choices it lists."""
    match = _INVALID_CHOICE.search(message)
    if match is None:
        return ""
    choices = [c.strip().strip("'\"") for c in match.group("all").split(",")]
    return _did_you_mean(match.group("word"), choices)


def _unrecognized(parser: _Parser, args: argparse.Namespace, extras: list[str]) -> NoReturn:
    """Refuse leftover arguments, suggesting the flag meant by the first unknown one
    among the flags of the top level and of the subcommand given."""
    chosen = (parser.commands or {}).get(getattr(args, "command", None) or "", parser)
    flags = sorted(set(_FLAG.findall(parser.format_usage() + chosen.format_usage())))
    unknown = [e.partition("=")[0] for e in extras if e.startswith("-") and len(e) > 1]
    hint = _did_you_mean(unknown[0], flags) if unknown else ""
    chosen.error(f"unrecognized arguments: {' '.join(extras)}{hint}")


def parse_scope(text: str | None) -> Scope:
    """``ORG/DOMAIN`` -> Scope; no --scope at all -> the unset bucket. Anything else,
    ``--scope ""`` included, is refused: an empty value is a tenant id that went missing,
    and serving the shared bucket in its place is the mistake scopes exist to prevent."""
    if text is None:
        return Scope()
    org, sep, domain = text.partition("/")
    if not sep or not org or not domain or "/" in domain:
        raise UsageError(f"--scope must look like ORG/DOMAIN (two non-empty parts), got {text!r}")
    return Scope(org, domain)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _add_globals(parser: argparse.ArgumentParser, *, top: bool) -> None:
    # On subcommands the defaults are SUPPRESS, so `cmd --store X` and `--store X cmd`
    # both work and a subcommand never resets what the top level set.
    def d(value: object) -> object:
        return value if top else argparse.SUPPRESS

    parser.add_argument(
        "--store",
        default=d(None),
        metavar="PATH|URL",
        help=f"SQLite file (default: $AGENTKIT_STORE or {DEFAULT_STORE_PATH}) "
        "or a postgresql:// URL",
    )
    parser.add_argument(
        "--scope", default=d(None), metavar="ORG/DOMAIN", help="tenant bucket (default: unset)"
    )
    parser.add_argument(
        "--model",
        default=d(None),
        metavar="NAME|PATH",
        help="a sentence-transformers model, as --embedder st:NAME (default: the store's own)",
    )
    parser.add_argument(
        "--embedder",
        default=d(None),
        metavar="SPEC",
        help="onnx (MiniLM int8, the default), onnx:fp32, st[:MODEL] (sentence-transformers "
        "on torch) or hashing (default: the store's own; also: AGENTKIT_EMBEDDER)",
    )
    parser.add_argument(
        "--hashing",
        action="store_true",
        default=d(False),
        help="use the model-free HashingEmbedder (also: AGENTKIT_EMBEDDER=hashing)",
    )


def build_parser() -> _Parser:
    parser = _Parser(
        prog=PROG,
        description="Hybrid (dense + lexical) memory on an embedded SQLite store.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    _add_globals(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    parser.commands = sub.choices

    ingest = sub.add_parser("ingest", help="index .txt/.md files, folders and BEIR corpora")
    _add_globals(ingest, top=False)
    ingest.add_argument("paths", nargs="+", metavar="PATH")
    ingest.add_argument("--chunk-size", type=_positive, default=1200, metavar="CHARS",
                        help="target chunk length for text and Markdown (default 1200)")
    ingest.add_argument("--overlap", type=_non_negative, default=200, metavar="CHARS",
                        help="characters shared by neighbouring chunks (default 200)")
    ingest.add_argument("--batch", type=_positive, default=None, metavar="N",
                        help="chunks gathered per store write, one transaction of whole "
                        "documents (default: several thousand)")

    query = sub.add_parser("query", help="search the store (hybrid by default)")
    _add_globals(query, top=False)
    query.add_argument("text", metavar="TEXT")
    query.add_argument("-k", type=_positive, default=5, help="results to show (default 5)")
    query.add_argument("--json", action="store_true", help="machine-readable output")
    query.add_argument("--explain", action="store_true",
                       help="show each half's own ranks, the dedupe merges and timings")
    mode = query.add_mutually_exclusive_group()
    mode.add_argument("--dense", dest="mode", action="store_const", const="dense",
                      help="the embedding (semantic) half only")
    mode.add_argument("--lexical", dest="mode", action="store_const", const="lexical",
                      help="the word (BM25) half only; needs no embedding model")
    query.set_defaults(mode="hybrid")
    from agentkit.cli import _where  # the filter flags live with their parser

    _where.add_arguments(query, "return only")
    query.add_argument("--candidates", type=_positive, default=50, metavar="N",
                       help="hybrid: how deep each half is read before fusion (default 50)")
    query.add_argument("--exact", action="store_true",
                       help="dense: compare with every vector of the scope, not the "
                       "approximate index's candidates (slower on large scopes)")

    imp = sub.add_parser("import", help="copy a LlamaIndex, Chroma or FAISS folder in")
    _add_globals(imp, top=False)
    imp.add_argument("source", metavar="SOURCE", help="the folder the other store saved")
    imp.add_argument("--kind", choices=("llamaindex", "chroma", "faiss"), default=None,
                     help="what SOURCE holds (default: told by its files)")
    imp.add_argument("--collection", default=None, metavar="NAME",
                     help="Chroma: the collection (default: the folder's only one)")
    imp.add_argument("--trust-pickle", action="store_true",
                     help="FAISS: load its index.pkl (a pickle runs code: trusted files only)")
    imp.add_argument("--source-embedder", default=None, metavar="NAME",
                     help="the model that made SOURCE's vectors (a model name, or hashing); "
                     "they are reused when it is the store's")
    imp.add_argument("--batch", type=_positive, default=1000, metavar="N",
                     help="records read per batch (default 1000); writes gather batches "
                     "into transactions of several thousand records")

    from agentkit.cli import _forget, _stats  # their own flags live with them

    forget = sub.add_parser("forget", help="delete records by id, --where or --all of a scope")
    _add_globals(forget, top=False)
    _forget.add_arguments(forget)

    stats = sub.add_parser("stats", help="documents, chunks, embedder, size, last write")
    _add_globals(stats, top=False)
    _stats.add_arguments(stats)

    from agentkit.cli import _index

    index = sub.add_parser("index", help="check or rebuild the indexes beside a SQLite store")
    _add_globals(index, top=False)
    _index.add_arguments(index)

    from agentkit.cli import _mcp_args  # the mcp subcommand's flags live with its server

    _mcp_args.register(sub, _add_globals, _positive)

    ev = sub.add_parser("eval", help="nDCG and recall on a BEIR-layout folder")
    _add_globals(ev, top=False)
    ev.add_argument("dir", metavar="DIR")
    ev.add_argument("--split", default=None,
                    help="qrels split (default: test if present, else the only one)")
    ev.add_argument("-k", type=_positive, default=10, help="nDCG cutoff (default 10)")
    ev.add_argument("--recall-at", type=_positive, default=100, metavar="N",
                    help="recall cutoff (default 100)")
    ev.add_argument("--modes", default="dense,lexical,hybrid",
                    help="comma-separated subset of dense,lexical,hybrid")
    ev.add_argument("--limit", type=_positive, default=None, metavar="N",
                    help="evaluate only the first N judged queries")
    return parser


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        _unrecognized(parser, args, extras)
    args.scope = parse_scope(args.scope)
    args.store = str(default_store_path(args.store))
    from agentkit.cli._embedder_choice import normalise

    normalise(args)  # --embedder/--hashing/--model and their environment variables
    if args.command == "eval":
        modes = [m.strip() for m in args.modes.split(",") if m.strip()]
        bad = [m for m in modes if m not in ("dense", "lexical", "hybrid")]
        if bad or not modes:
            raise UsageError(f"--modes takes dense, lexical and/or hybrid, got {args.modes!r}")
        args.modes = modes
    return args
