"""A BM25 index over the installed tools: what ``presets_search`` ranks.

Each installed tool is one document: its MCP name (split into words), its
title, its description, and the names, groups and prompt fragments of the
presets that list it. A query is ranked against all of them with BM25
(``bm25s``, sparse matrices over ``numpy``), words reduced to their English
stems (PyStemmer's Snowball), so "rotating" finds "rotate" and "layers"
finds "layer". Which of the ranked tools a caller may see is the caller's
business: ``ToolIndex.search`` takes a filter and ranks only what it passes,
so a hidden tool never takes a place in the results.

Library code: it imports neither ``mcp`` nor the served process, and loads
``bm25s`` (and with it ``numpy``, about half a second) only when an index is
built.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from agent_presets.lib.adapters import ToolAdapterRegistry
    from agent_presets.lib.model import Preset

__all__ = ["ACTION_WORDS", "SearchDoc", "ToolIndex", "catalog_docs", "query_words", "words"]

NAME_WEIGHT: Final = 3
"""How many times a tool's name words count: a name is short and says what the tool is."""
TITLE_WEIGHT: Final = 2

_SPLIT: Final = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_STOPWORD_TEXT: Final = """
    a an and are as at be but by can do does for from has have how i if in into is it its
    me my of on one or our so some that the their them then there these this those to up us
    use used uses using want was we what when where which while who will with you your
    please need needs
"""
_STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())


ACTION_WORDS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "create": (
            "add", "new", "make", "book", "start", "record", "register", "hire", "write", "save",
        ),
        "delete": ("remove", "drop", "discard", "erase", "destroy", "throw", "rid", "trash"),
        "update": (
            "change", "edit", "modify", "fix", "rename", "adjust", "swap", "extend", "mark",
            "lock", "set", "replace", "roll",
        ),
        "get": (
            "show", "open", "view", "display", "read", "detail", "details", "status", "pull", "see",
        ),
        "list": ("all", "every", "exist", "existing", "overview", "show", "what", "which"),
        "search": (
            "find", "look", "lookup", "query", "match", "matching", "mention", "which", "named",
            "contain", "containing",
        ),
        "export": ("download", "backup", "back", "print", "pdf", "save", "spreadsheet", "file"),
        "import": ("upload", "load", "bring", "migrate", "bulk", "spreadsheet", "file"),
        "share": ("send", "invite", "grant", "access", "give", "let", "permission", "see"),
        "archive": ("hide", "retire", "shelve", "away", "restore", "keep", "lose", "close"),
    }
)  # fmt: skip
"""The verbs a task says and the tool-catalog verbs each may mean: a query word in a row also
counts as the row's verb, since a tool is named by the operation ("delete") and a person
asks in their own words ("remove"). Generic to tool catalogs, not to one plugin; a word may
stand for several verbs ("show": get, list)."""


def words(text: str) -> list[str]:
    """``text`` as index terms: identifiers split (``insert_shape``, ``insertShape``),
    lowercased, stop words dropped, each word stemmed."""
    raw = [w.lower() for w in _SPLIT.findall(text)]
    return _stem([w for w in raw if w not in _STOPWORDS and len(w) > 1])


def query_words(text: str) -> list[str]:
    """``words(text)``, and for a word of ``ACTION_WORDS`` the verb it stands for."""
    raw = [w.lower() for w in _SPLIT.findall(text)]
    kept = [w for w in raw if w not in _STOPWORDS and len(w) > 1]
    extra = [verb for w in raw for verb in _VERBS_OF.get(w, ())]
    return _stem(kept + extra)


_VERBS_OF: Final[dict[str, tuple[str, ...]]] = {}
for _verb, _said in ACTION_WORDS.items():
    for _word in _said:
        _VERBS_OF[_word] = (*_VERBS_OF.get(_word, ()), _verb)

_stemmer: list[Any] = []


def _stem(tokens: list[str]) -> list[str]:
    if not _stemmer:
        import Stemmer  # PyStemmer: a C extension, loaded with the first index

        _stemmer.append(Stemmer.Stemmer("english"))
    stems: list[str] = _stemmer[0].stemWords(tokens)
    return stems


@dataclass(frozen=True)
class SearchDoc:
    """One installed tool as the index sees it."""

    tool_id: str
    name: str
    """Its MCP name, as the server would serve it."""
    presets: tuple[str, ...]
    """The presets that list it, in registration order."""
    text: str
    """What is indexed, for the record (``terms`` is what is ranked)."""
    terms: tuple[str, ...]


def catalog_docs(adapters: ToolAdapterRegistry, presets: Iterable[Preset]) -> list[SearchDoc]:
    """One document per installed tool, in the adapters' order.

    A tool no preset lists is left out: it is never served, so a search that
    found it could only disappoint.
    """
    listing: dict[str, list[Preset]] = {}
    for preset in presets:
        for tool_id in preset.tool_ids:
            listing.setdefault(tool_id, []).append(preset)
    docs = []
    for adapter in adapters.list():
        holders = listing.get(adapter.id)
        if not holders:
            continue
        name = adapters.mcp_name(adapter)
        description = adapters.description(adapter)
        title = adapter.title or ""
        # The name without the host's namespace: "space" would match every tool.
        bare = adapter.name or adapter.id
        parts = [bare] * NAME_WEIGHT + [title] * TITLE_WEIGHT + [description]
        for preset in holders:
            parts += [preset.name, preset.group or "", preset.system_prompt or ""]
        text = "\n".join(p for p in parts if p)
        docs.append(
            SearchDoc(
                tool_id=adapter.id,
                name=name,
                presets=tuple(p.name for p in holders),
                text=text,
                terms=tuple(words(text)),
            )
        )
    return docs


class ToolIndex:
    """BM25 over ``docs``; ``search`` ranks a query among the documents a filter passes."""

    def __init__(self, docs: Sequence[SearchDoc]) -> None:
        import bm25s  # only where an index is built: it brings numpy
        import numpy

        self.docs = tuple(docs)
        self._numpy = numpy
        self._bm25 = bm25s.BM25()
        corpus = [list(doc.terms) or [""] for doc in self.docs]
        if self.docs:
            self._bm25.index(corpus, show_progress=False)
        self._vocab: Mapping[str, int] = self._bm25.vocab_dict if self.docs else {}
        self._by_name = {doc.name: i for i, doc in enumerate(self.docs)}

    def __len__(self) -> int:
        return len(self.docs)

    def get(self, name: str) -> SearchDoc | None:
        at = self._by_name.get(name)
        return None if at is None else self.docs[at]

    def search(
        self, query: str, limit: int, passes: Callable[[SearchDoc], bool] | None = None
    ) -> list[tuple[SearchDoc, float]]:
        """The ``limit`` best documents for ``query`` that ``passes``, best first.

        Only documents sharing a term with the query are ranked (a score above
        zero); ties keep the index's order, so a result never depends on chance.
        """
        if not self.docs or limit < 1:
            return []
        ids = sorted({self._vocab[t] for t in query_words(query) if t in self._vocab})
        if not ids:
            return []
        np = self._numpy
        scores = self._bm25.get_scores_from_ids(ids)
        ranked = np.argsort(-scores, kind="stable")
        found: list[tuple[SearchDoc, float]] = []
        for at in ranked:
            score = float(scores[at])
            if score <= 0.0:
                break
            doc = self.docs[int(at)]
            if passes is None or passes(doc):
                found.append((doc, score))
                if len(found) == limit:
                    break
        return found
