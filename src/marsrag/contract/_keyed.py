"""Keyed markup: a field name used as a key by markup, its value the text the key introduces, markup removed.

Tool calls written as text name their arguments with markup, and each family has its own: Qwen3-Coder's
``<parameter=hook>``, MiniMax's and Anthropic's ``<parameter name="hook">``, GLM's
``<arg_key>hook</arg_key><arg_value>``, Gemma's ``hook:<escape>``, DSPy's ``[[ ## hook ## ]]``, plain ``<hook>``
elements and their square-bracket form ``[hook]...[/hook]``. The key syntaxes are one table (:data:`KEY_SYNTAXES`),
shaped like llama.cpp's XML tool-call engine (a key's start and separator, a value's end): a family is a row's
instance (a namespace before a tag, a suffix after its name, another tag name), not a row of its own, so a family
never seen reads the same way.

Every key syntax is tried at once, so the reader is also the last resort for markup no row describes: the value
of a key runs to its own end mark, else to the next key, else to the end of the text, and the markup left around
it (closing tags, CDATA, quotes, entity escapes) is removed. A field written twice keeps its last value (a
format's example or a draft comes before the answer). Only the five field names are keys: text around them is
never content, so junk can only make an answer fail, never make a failed one valid.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Final, NamedTuple

from marsrag.contract._json_forms import field_key

_NAME: Final = r"(?P<name>hook|grip|payoff|reinforce|loop)"
# A tag's namespace or vendor prefix: "steptml:", "atem:", "｜DSML｜", "ifm|", "minimax:".
_NS: Final = r"(?:[A-Za-z][\w.-]{0,19}:|[｜|][A-Za-z]{1,10}[｜|][ \t]?|[A-Za-z]{1,10}\|)?"
# A tag's suffix after its name (HY's "<arg_key:6124c78e>").
_SFX: Final = r"(?::[^\s<>]{1,24})?"
_ARG: Final = r"(?:parameter|param|argument|arg|field|property)"


@dataclass(frozen=True, slots=True)
class KeySyntax:
    """One way markup names a value: the key (with the field name in group ``name``) and the value's end mark."""

    id: str
    rows: str
    key: re.Pattern[str]
    #: The value's end mark, or None when each field closes with its own mark (``closing``, ``{name}`` its name).
    end: re.Pattern[str] | None
    closing: str = ""


def _syntax(id: str, rows: str, key: str, end: str | None, closing: str = "") -> KeySyntax:
    compiled = re.compile(end, re.IGNORECASE) if end else None
    return KeySyntax(id, rows, re.compile(key, re.IGNORECASE), compiled, closing)


#: The key syntaxes, and the catalog rows (:data:`marsrag.contract.catalog.FORMATS`) written with each.
KEY_SYNTAXES: Final[tuple[KeySyntax, ...]] = (
    _syntax(
        "parameter_eq",
        "qwen3_coder, seed_oss",
        rf"<\s*{_NS}{_ARG}\s*=\s*[\"']?{_NAME}[\"']?\s*>",
        rf"<\s*/\s*{_NS}{_ARG}\s*>",
    ),
    _syntax(
        "name_attribute",
        "minimax_m2, deepseek_v32, step3, dots, minicpm5, muse, anthropic_xml, kimi_k3",
        rf"(?:<\s*{_NS}|<\|open\|>){_ARG}\b[^<>]{{0,80}}?\b(?:name|key)\s*=\s*[\"']?{_NAME}[\"']?[^<>]{{0,80}}?(?:>|<\|sep\|>)",
        rf"<\s*/\s*{_NS}{_ARG}\s*>|<\|close\|>",
    ),
    _syntax(
        "arg_pairs",
        "glm45, hunyuan, k2_horizon",
        rf"<\s*{_NS}arg_key{_SFX}\s*>\s*{_NAME}\s*<\s*/\s*{_NS}arg_key{_SFX}\s*>\s*"
        rf"(?:<\s*{_NS}arg_type{_SFX}\s*>[^<>]{{0,40}}<\s*/\s*{_NS}arg_type{_SFX}\s*>\s*)?"
        rf"<\s*{_NS}arg_value{_SFX}\s*>",
        rf"<\s*/\s*{_NS}arg_value{_SFX}\s*>",
    ),
    # A key element naming the field, then the element holding its value: Apple's property lists
    # ("<key>hook</key><string>...</string>"), and any markup that pairs a key element with a value element.
    _syntax(
        "key_element",
        "apple_plist",
        rf"<\s*{_NS}(?:key|name){_SFX}\s*>\s*{_NAME}\s*<\s*/\s*{_NS}(?:key|name){_SFX}\s*>\s*"
        rf"<\s*{_NS}(?!/)[A-Za-z][\w.-]{{0,30}}{_SFX}\s*>",
        rf"<\s*/\s*{_NS}[A-Za-z][\w.-]{{0,30}}{_SFX}\s*>",
    ),
    _syntax(
        "element",
        "xml_tags, dspy_xml, minimax_m3",
        rf"<\s*{_NS}{_NAME}(?:\s[^<>]{{0,80}})?>",
        None,
        rf"<\s*/\s*{_NS}{{name}}\s*>",
    ),
    # "[hook]...[/hook]"; a Markdown link's text ("[loop](url)") is no key.
    _syntax("bracket_element", "bracket_tags", rf"\[[ \t]*{_NAME}[ \t]*\](?!\()", None, r"\[\s*/\s*{name}\s*\]"),
    _syntax("field_marker", "dspy_chat", rf"\[\[\s*##\s*{_NAME}\s*##\s*\]\]", r"\[\[\s*##\s*\w+\s*##\s*\]\]"),
    _syntax(
        "escape_quoted",
        "functiongemma, gemma4",
        rf"(?<![\w-]){_NAME}\s*:\s*(?:<escape>|<\|\"\|>)",
        r"<escape>|<\|\"\|>",
    ),
)
_TRIGGERS: Final = ("<", "[")
# Markup left at a value's edges: tags, a vendor namespace run ("]<]minimax[>["), brackets of CDATA.
_EDGE_TAG: Final = re.compile(r"^(?:\s*<[^<>\n]{1,80}>)+|(?:<[^<>\n]{1,80}>\s*)+$")
_NAMESPACE_RUN: Final = re.compile(
    r"^\s*(?:[\[\]<>|]{2,}\w{1,20}[\[\]<>|]{2,}\s*)+|(?:[\[\]<>|]{2,}\w{1,20}[\[\]<>|]{2,}\s*)+$"
)
_CDATA: Final = re.compile(r"^\s*<!\[CDATA\[(?P<inner>.*?)\]\]>\s*$", re.DOTALL)


class Keyed(NamedTuple):
    """The values read, keyed by field, and where the first key starts."""

    values: dict[str, str]
    start: int


def may_have_keys(text: str) -> bool:
    """A cheap test: False means no key syntax can match."""
    return any(trigger in text for trigger in _TRIGGERS)


def read_keyed(text: str) -> Keyed | None:
    """The fields keyed by markup in ``text`` (the last value of each), or None when no field is keyed."""
    keys: list[tuple[int, int, str, KeySyntax]] = []
    for syntax in KEY_SYNTAXES:
        for match in syntax.key.finditer(text):
            name = field_key(match["name"])
            if name is not None:
                keys.append((match.start(), match.end(), name, syntax))
    if not keys:
        return None
    keys.sort(key=lambda key: key[0])
    kept: list[tuple[int, int, str, KeySyntax]] = []
    for key in keys:
        if not kept or key[0] >= kept[-1][1]:  # a key inside another key's markup is part of it
            kept.append(key)
    values: dict[str, str] = {}
    for index, (_, value_start, name, syntax) in enumerate(kept):
        limit = kept[index + 1][0] if index + 1 < len(kept) else len(text)
        end = _value_end(text, value_start, limit, name, syntax)
        values[name] = _clean(text[value_start:end])
    return Keyed(values, kept[0][0])


def _value_end(text: str, start: int, limit: int, name: str, syntax: KeySyntax) -> int:
    """Where a value ends: its own end mark before the next key, else the next key (or the text's end)."""
    end = syntax.end
    if end is None:  # an element ends with its own closing mark
        end = re.compile(syntax.closing.replace("{name}", name), re.IGNORECASE)
    match = end.search(text, start, limit)
    return match.start() if match is not None else limit


def strip_markup_runs(value: str) -> str:
    """``value`` without a vendor's bracket-run namespace at either edge (``]<]minimax[>[``), whichever reader
    read it: such a run is markup, never content."""
    return _NAMESPACE_RUN.sub("", value) if "[" in value and "]" in value else value


def _clean(value: str) -> str:
    """A value without the markup left around it."""
    cdata = _CDATA.match(value)
    if cdata is not None:
        return cdata["inner"].strip()
    value = strip_markup_runs(value.strip())
    value = _EDGE_TAG.sub("", value).strip()
    if "&" in value and ";" in value:
        value = html.unescape(value)
    return value
