"""How text becomes lexical terms: the one analyzer every lexical engine here uses.

Indexing and querying must cut and stem words identically or a query misses the very
document it quotes, so the rules live in this one module: tantivy's simple tokenizer
(split on anything that is not a letter or digit), words longer than 40 bytes dropped,
lower-cased, English Snowball stemming (what tantivy calls ``en_stem``). Any other
store that ranks words (e.g. PostgreSQL BM25) should take its terms from ``terms`` /
``query_terms`` here rather than define its own.

Query text is only ever data: ``query_terms`` returns plain terms that callers turn
into term queries, never a string a query parser reads.
"""

from __future__ import annotations

import re

import tantivy

from agentkit.vector.port import MAX_QUERY_TERMS

ANALYZER = "agentkit_en"
"""The name the analyzer is registered under in every tantivy index."""

ANALYZER_VERSION = 1
"""Which rules built an index. Bump it with any change to ``analyzer``: an index stamped
with another version holds terms this code would not produce (a query would miss what
it quotes), so it is rebuilt from the rows rather than read."""

_WORD = re.compile(r"[^\W_]+")


def analyzer() -> tantivy.TextAnalyzer:
    """A fresh analyzer object (tantivy registers its own copy per index)."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


_ANALYZER = analyzer()


def terms(text: str) -> list[str]:
    """Every term of ``text``, in order, repeats kept (what a document is indexed as)."""
    return list(_ANALYZER.analyze(text))


def query_terms(text: str) -> list[str]:
    """The distinct terms of the query's first ``MAX_QUERY_TERMS`` distinct words.

    Only the prefix holding those words is analysed, so a pasted book costs what its
    opening paragraph costs; stemming can only merge words, so the cap holds for terms.
    """
    if len(text) < 2 * MAX_QUERY_TERMS:
        # n words take at least 2n - 1 characters, so a text this short holds no more
        # words than the cap: analyse it whole, no counting pass.
        return list(dict.fromkeys(_ANALYZER.analyze(text)))
    seen: dict[str, None] = {}
    end = 0
    for match in _WORD.finditer(text):
        seen[match.group().lower()] = None
        end = match.end()
        if len(seen) >= MAX_QUERY_TERMS:
            break
    return list(dict.fromkeys(_ANALYZER.analyze(text[:end])))
