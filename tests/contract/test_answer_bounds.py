"""Where an answer starts and ends inside a text: the markup around the labels bounds the last section, a role's
name before the answer is a header, and each harmony message starts a line of its own."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import FIELDS, validate_output
from tests.contract.samples import CONTENT, labelled
from tests.contract.strategies import answers


def reads(raw: str, expected: dict[str, str] = CONTENT) -> None:
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == expected, raw


# -- the element around the labels closes after the last section ----------------------------------------------

WRAPPED = {
    "one element": "<result>\n{body}\n</result>",
    "nested elements": "<attempt_completion>\n<result>\n{body}\n</result>\n</attempt_completion>",
    "a namespace and attributes": '<ns:final kind="answer">\n{body}\n</ns:final>\nDone.',
    "the closing tags on the last line": "<answer><reply>\n{body}</reply></answer>",
    "reasoning, then the element": "<thinking>\nDisk first.\n</thinking>\n<response>\n{body}\n</response>",
}


@pytest.mark.parametrize("wrapper", WRAPPED.values(), ids=WRAPPED.keys())
@pytest.mark.parametrize("form", ["{L}: {v}", "**{T}:** {v}", "## {T}\n{v}\n"])
def test_the_last_section_ends_where_the_element_around_the_labels_closes(wrapper: str, form: str) -> None:
    reads(wrapper.format(body=labelled(form)))


def test_a_closing_tag_of_an_element_opened_inside_the_answer_stays() -> None:
    """Only the elements opened before the first label bound the answer; markup inside a value is its content."""
    loop = "Should we wrap the restarts in <b>maintenance</b> windows?"
    reads(labelled("{L}: {v}", content={**CONTENT, "loop": loop}), {**CONTENT, "loop": loop})


def test_an_element_closed_before_the_labels_bounds_nothing() -> None:
    """A closed element before the labels (a summary) leaves the last section to run on."""
    grip = CONTENT["grip"] + "\n\nThe same held in all three regions."
    raw = "<summary>Cold caches.</summary>\n" + labelled("{L}: {v}", content={**CONTENT, "grip": grip})
    raw += "\n\nOr both, one node each."
    result = validate_output(raw)
    assert result.ok and result.loop_output["loop"].endswith("Or both, one node each."), result.loop_output


# -- a list item ends where an unindented paragraph starts (CommonMark) ---------------------------------------

SIGN_OFF = "\n\nLet me know if you would like more detail!"


@pytest.mark.parametrize("form", ["{n}. **{T}:** {v}", "- **{T}:** {v}", "* {T}: {v}", "{n}) {L} - {v}", "• {T}: {v}"])
def test_a_paragraph_after_the_last_list_item_is_not_in_it(form: str) -> None:
    reads("Here's the breakdown:\n\n" + labelled(form) + SIGN_OFF)


def test_an_indented_paragraph_continues_the_last_item() -> None:
    """Indented to the item's content, a paragraph is the item's own (CommonMark), so it stays in the loop."""
    result = validate_output(labelled("{n}. {T}: {v}") + "\n\n   Or from both, one node each.")
    assert result.ok and result.loop_output["loop"].endswith("sample?\n\n   Or from both, one node each.")


def test_a_label_alone_on_its_item_line_keeps_the_paragraph_that_follows() -> None:
    """The blank line right after a label that stands alone separates the label from its content, not an end."""
    reads("\n".join(f"{n}. **{name.title()}:**\n\n{CONTENT[name]}\n" for n, name in enumerate(FIELDS, 1)))


def test_plain_labels_keep_every_paragraph_of_the_last_section() -> None:
    """Without a list, where sections run to several paragraphs, nothing marks where the last one ends: its
    paragraphs are its own."""
    grip = CONTENT["grip"] + "\n\nThe same held in all three regions."
    raw = labelled("{L}: {v}", content={**CONTENT, "grip": grip}) + "\n\nOr from a replayed sample of yesterday's peak."
    result = validate_output(raw)
    assert result.ok and result.loop_output["loop"].endswith("yesterday's peak.")


@given(answers, st.sampled_from(["{n}. **{T}:** {v}", "- {T}: {v}"]), st.sampled_from(["Thanks!", "Hope this helps."]))
def test_any_list_answer_with_a_closing_paragraph_reads_its_five_values(
    answer: dict[str, str], form: str, closing: str
) -> None:
    reads(labelled(form, content=answer) + "\n\n" + closing, answer)


# -- the answering role's name before the answer --------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["Assistant: ", "ASSISTANT: ", "AI: ", "Bot:", "### Assistant: ", "gpt: "])
@pytest.mark.parametrize("form", ["{L} - {v}", "{L}: {v}", "**{T}:** {v}"])
def test_a_role_name_before_the_first_label_is_a_header(prefix: str, form: str) -> None:
    reads(prefix + labelled(form))


def test_a_role_name_inside_the_answer_is_content() -> None:
    """Only the very start of the answer can hold the header: a value beginning with such a word keeps it."""
    hook = "AI: the new ranking model doubled the p99 latency."
    reads(labelled("{L}: {v}", content={**CONTENT, "hook": hook}), {**CONTENT, "hook": hook})


def test_a_role_name_alone_does_not_become_an_answer() -> None:
    assert validate_output("Assistant: ").status == "failed"
    assert validate_output("Assistant: HOOK - " + CONTENT["hook"]).status != "valid"


# -- harmony: each message starts its own line ----------------------------------------------------------------


@pytest.mark.parametrize("form", ["{T}: {v}", "{L}: {v}", "**{T}:** {v}"])
def test_labels_right_after_a_harmony_message_header(form: str) -> None:
    analysis = "<|channel|>analysis<|message|>Cold caches again; answer in sections.<|end|>"
    reads(f"{analysis}<|start|>assistant<|channel|>final<|message|>{labelled(form)}<|return|>")


def test_a_role_header_decoded_without_its_separator_is_removed() -> None:
    """``<|start|>assistantHook: ...``: the role name ends where a lower-case word would not."""
    reads("<|start|>assistant" + labelled("{T}: {v}"))


# -- fences, breaks and the closers of what the first label's paragraph opened ----------------------------------

FENCED = {
    "a backtick fence": "Here it is:\n```\n{body}\n```\nAnything else?",
    "a tilde fence": "~~~markdown\n{body}\n~~~\n\nDone.",
    "a directive": ':::artifact{{identifier="x" type="text/markdown"}}\n{body}\n:::\n\nThis follows the format.',
    "a directive around a fence": ":::artifact\n```\n{body}\n```\n:::\nLet me know!",
    "a triple-quoted block": "'''\n{body}\n'''",
    "a thematic break": "{body}\n\n---\n*Generated by the on-call assistant.*",
    "a rule of equals signs": "'''\n==========\n{body}\n==========\n'''",
}


@pytest.mark.parametrize("wrapper", FENCED.values(), ids=FENCED.keys())
def test_the_last_section_ends_where_its_fence_closes_or_a_break_separates_it(wrapper: str) -> None:
    reads(wrapper.format(body=labelled("{L}: {v}")))


def test_a_fence_inside_the_last_section_is_its_content() -> None:
    """A fence opened after the last label is the section's own (a command to run), not the end of the block."""
    loop = "Should we run this?\n```bash\nkubectl rollout restart deploy/cache\n```"
    result = validate_output(labelled("{L}: {v}", content={**CONTENT, "loop": loop}))
    assert result.ok and result.loop_output["loop"].startswith(loop[:-4])


def test_a_setext_underline_under_a_lone_label_is_no_break() -> None:
    reads("\n".join(f"{name.title()}\n{'-' * 8}\n{value}\n" for name, value in CONTENT.items()))


CLOSED = {
    "a call's string argument": 'finish(message="{body}")',
    "a call in an element": '<answer>finish(message="{body}")</answer>',
    "a bracketed action": "Action: Finish[{body}]",
    "a statement": 'const answer = {{\n  "text": "{body}"\n}};',
    "a dumped array": "Array\n(\n    [choices] => Array\n        (\n            [content] => {body}\n        )\n\n"
    "    [usage] => Array ( [total_tokens] => 285 )\n)",
}


@pytest.mark.parametrize("wrapper", CLOSED.values(), ids=CLOSED.keys())
@pytest.mark.parametrize("form", ["{T}: {v}", "{L}: {v}"])
def test_the_closers_of_what_the_first_label_follows_are_markup(wrapper: str, form: str) -> None:
    """A label glued to an opener, and the matching closers at the very end: the block is inside them."""
    reads(wrapper.format(body=labelled(form)))


@pytest.mark.parametrize(
    "wrapper",
    [
        '%Message.ContentPart{\n  type: :text,\n  content: "{body}",\n  options: []\n}',
        'Choice {\n    text: "\n\n{body}",\n    index: 0,\n}',
        'reply(text="{body}");',
    ],
)
def test_a_string_literal_around_the_labels_closes_at_a_quote_before_a_comma_or_closer(wrapper: str) -> None:
    reads(wrapper.replace("{body}", labelled("{L}: {v}", sep="\n")))


def test_a_quotation_inside_the_last_section_is_its_content() -> None:
    loop = 'Should the banner say "maintenance", or stay "degraded" until noon?'
    reads('reply(text="' + labelled("{T}: {v}", content={**CONTENT, "loop": loop}) + '")', {**CONTENT, "loop": loop})


def test_brackets_the_last_section_opens_itself_are_its_own() -> None:
    """Inside a call, the last section's own balanced brackets stay; the call's closer ends it."""
    loop = "Should we pre-warm (from the 02:00 snapshot) or [replay] traffic?"
    raw = "Action: Finish[" + labelled("{T}: {v}", content={**CONTENT, "loop": loop}) + "]\nObservation: done"
    reads(raw, {**CONTENT, "loop": loop})


def test_a_closer_the_paragraph_did_not_open_stays() -> None:
    """A value ending in a bracket of its own keeps it: nothing before the first label opened one."""
    loop = "Should we pre-warm from the latest snapshot (taken at 02:00)"
    reads(labelled("{L}: {v}", content={**CONTENT, "loop": loop}), {**CONTENT, "loop": loop})


# -- a label glued to what precedes it --------------------------------------------------------------------------


@pytest.mark.parametrize("lead", ["why does billing fail, short answer", "Finish[", 'reply(text="', "=>"])
def test_a_first_label_glued_to_what_precedes_it_is_read(lead: str) -> None:
    raw = lead + labelled("{T}: {v}")
    result = validate_output(raw)
    assert result.loop_output["hook"] == CONTENT["hook"], (raw, result.loop_output)


def test_a_capitalized_name_glued_into_code_or_an_escape_is_no_label() -> None:
    """``onHook:`` in code is a lower-case word before the name only when the line labels miss a section; ``\\nHook``
    is an escape's letter, never a word."""
    raw = '{"message": "' + labelled("{T}: {v}").replace("\n", "\\n") + '"}'
    result = validate_output(raw)
    assert result.ok and dict(result.loop_output) == CONTENT
    full = labelled("{L}: {v}", content={**CONTENT, "payoff": "Set webHook: false on the cache client."})
    assert validate_output(full).loop_output["payoff"] == "Set webHook: false on the cache client."


@pytest.mark.parametrize("lead", ["Final output: ", "2024-05-01 12:00:03 INFO answer: ", "回答："])
def test_a_first_label_after_a_header_colon_on_its_line_is_read(lead: str) -> None:
    reads(lead + labelled("{L}: {v}"))


DESCRIBED = {name: f"{name.title()}: the {name} of the answer, one sentence" for name in FIELDS}
SCHEMA_ECHOES = {
    "a schema's descriptions": json.dumps(
        {"type": "object", "properties": {n: {"type": "string", "description": d} for n, d in DESCRIBED.items()}}
    ),
    "the same, indented": json.dumps({"properties": {n: {"description": d} for n, d in DESCRIBED.items()}}, indent=2),
    "a format line in parentheses": "Answer in this format: " + " ".join(f"({d})" for d in DESCRIBED.values()),
    "a format line in brackets": "Reply as " + ", ".join(f"[{d}]" for d in DESCRIBED.values()),
}


@pytest.mark.parametrize("raw", SCHEMA_ECHOES.values(), ids=SCHEMA_ECHOES.keys())
def test_labels_glued_after_every_opener_are_no_answer(raw: str) -> None:
    """Only the first label can be glued (where the answer was joined to what came before it): a schema or a format
    line whose every label follows an opener is the prompt's text, never an answer."""
    assert validate_output(raw).status != "valid"


OTHER_SECTIONS = {
    "bold": ("**{T}:** {v}\n", "\n**Sources:**\n1. https://example.com/purge\n2. Runbook, cache section"),
    "capitals": ("{L}: {v}", "\n\nNOTES: the canary already runs the new setting."),
    "headings": ("## {T}\n{v}\n", "\n## Sources\n- runbooks/cache.md"),
    "numbered bold": ("{n}. **{T}:** {v}", "\n\n6. **Next steps:** page the cache owner."),
}


@pytest.mark.parametrize(("form", "after"), OTHER_SECTIONS.values(), ids=OTHER_SECTIONS.keys())
def test_a_section_of_another_name_in_the_answers_style_ends_the_last_one(form: str, after: str) -> None:
    reads(labelled(form) + after)


def test_a_line_that_only_looks_like_a_label_inside_the_last_section_stays() -> None:
    """Without a blank line before it, a "Word:" line is the section's content (its options, say)."""
    loop = "Which do you prefer?\nOption A: restart now.\nOption B: wait for the dip."
    reads(labelled("{T}: {v}", content={**CONTENT, "loop": loop}), {**CONTENT, "loop": loop})


@pytest.mark.parametrize(
    "trailer", ["Signed-off-by: On-call Bot <oncall@example.com>", "Refs: #4411", "Co-authored-by: A"]
)
@pytest.mark.parametrize("form", ["{T}: {v}", "{L}: {v}"])
def test_a_label_word_on_the_line_after_one_line_sections_ends_the_last_one(form: str, trailer: str) -> None:
    """Sections of one line each, one per line: the next ``Word:`` line (a git trailer) is a field of its own."""
    reads("fix: rotate logs again\n\n" + labelled(form) + "\n" + trailer + "\n")


# -- an email's signature and quoted history, a comment block: text that is not the answer ---------------------

QUOTED = "\n\nOn Tue, 4 Mar 2025 at 09:12, Priya <priya@example.com> wrote:\n"


@pytest.mark.parametrize("delimiter", ["-- ", "--"])
def test_a_signature_delimiter_ends_the_last_section(delimiter: str) -> None:
    reads("Hi Priya,\n\n" + labelled("{T}: {v}") + f"\n\n{delimiter}\nSRE on-call assistant\n")


@pytest.mark.parametrize("form", ["{T}: {v}", "**{T}:** {v}"])
def test_quoted_history_under_an_answer_is_not_read(form: str) -> None:
    older = {name: f"An older {name} sentence that was answered yesterday." for name in FIELDS}
    quoted = "\n".join("> " + line for line in labelled(form, content=older).split("\n"))
    reads(labelled(form) + QUOTED + quoted + "\n>\n> Thanks,\n> Priya\n")


def test_an_incomplete_answer_over_a_quoted_complete_one_is_not_valid() -> None:
    """The quoted answer is someone else's (an earlier message): it neither completes nor replaces the new one."""
    own = "\n".join(labelled("{T}: {v}").split("\n")[:4])
    quoted = "\n".join("> " + line for line in labelled("{T}: {v}").split("\n"))
    result = validate_output("Updated answer below.\n\n" + own + "\n\n-- \nBot" + QUOTED + quoted)
    assert result.status == "partial" and {issue.field for issue in result.errors} == {"loop"}, result.errors


def test_an_answer_that_is_all_quoted_is_read() -> None:
    reads("\n".join("> " + line for line in labelled("**{T}:** {v}").split("\n")))


def test_labels_inside_a_comment_block_are_no_answer() -> None:
    """A ``#`` comment block (git's commit template, a script's header): every tool that reads it drops it."""
    commented = "\n".join("# " + line for line in labelled("{T}: {v}").split("\n"))
    raw = f"wip\n\n# Please enter the commit message for your changes.\n#\n{commented}\n#\n# On branch fix/cron\n"
    assert validate_output(raw).status != "valid"


def test_a_comment_block_after_the_answer_ends_it() -> None:
    reads(labelled("{T}: {v}") + "\n#\n# On branch fix/cron\n# Changes to be committed:\n#\tmodified: main.yml\n#\n")


@pytest.mark.parametrize("comment", ["// generated by ops-assistant, do not edit", "// a\n// b"])
def test_a_slash_comment_after_the_answer_ends_it(comment: str) -> None:
    reads("[horizontal]\n" + labelled("{l}:: {v}") + "\n\n" + comment + "\n")


def test_labels_in_slash_comments_are_no_answer() -> None:
    commented = "\n".join("// " + line for line in labelled("{T}: {v}").split("\n"))
    assert validate_output("const x = 1;\n" + commented + "\n").status != "valid"


def test_an_underscore_that_opens_no_emphasis_is_content() -> None:
    reinforce = "_cat/allocation shows disk.percent at 95 on es-data-03, and _cat/indices shows 580 GB of debug logs."
    reads(labelled("{l}: {v}", content={**CONTENT, "reinforce": reinforce}), {**CONTENT, "reinforce": reinforce})


def test_consecutive_heading_labels_are_no_comment_block() -> None:
    """Headings that hold their section (``# Hook: ...`` on each line) are Markdown: no ``#`` line stands alone."""
    reads(labelled("# {T}: {v}"))


@pytest.mark.parametrize("tags", [":drill:", ":ops:urgent:", ":@work:"])
def test_org_headline_tags_are_no_content(tags: str) -> None:
    reads(labelled("** {T}" + " " * 20 + tags + "\n   {v}\n"))


# -- records: a chat export's stamped lines, a console's prompts ----------------------------------------------------

CHAT = "[18/03/25, 07:41:09] Carla: the wifi on floor 3 is down again, what happened?\n[18/03/25, 07:41:31] OpsBot: "


@pytest.mark.parametrize("form", ["{l}: {v}", "{T}: {v}"])
def test_the_next_stamped_line_of_a_chat_export_is_another_message(form: str) -> None:
    reads(CHAT + labelled(form) + "\n[18/03/25, 07:42:02] Carla: thanks\n")


CONSOLES = {
    "powershell": ("PS C:\\Ops> Request-Response -Message $incident | Format-List\n\n", "\n\nPS C:\\Ops> "),
    "ipython": ("In [12]: print(answer)\n", "\n\nIn [13]: "),
    "iex": ("iex(7)> IO.puts(answer)\n", "\niex(8)> "),
    "python": (">>> print(answer)\n", "\n>>> "),
}


@pytest.mark.parametrize(("before", "after"), CONSOLES.values(), ids=CONSOLES.keys())
def test_the_next_prompt_of_a_console_ends_the_answer(before: str, after: str) -> None:
    reads(before + labelled("{T}: {v}") + after)


def test_a_lowercase_first_label_after_a_records_header_colon_is_read() -> None:
    """``output_text : hook: ...`` then the other labels on their lines, wrapped and indented (Format-List)."""
    pad = " " * 14
    lines = labelled("{l}: {v}").split("\n")
    raw = "id          : resp_68a1\noutput_text : " + lines[0] + "\n" + "\n".join(pad + line for line in lines[1:])
    reads(raw)


def test_a_doubled_backslash_alone_is_no_markdown_escape() -> None:
    payoff = "Grant the service account Modify rights on \\\\fs02\\sqlbackup and rerun the job."
    reads(labelled("{T}: {v}", content={**CONTENT, "payoff": payoff}), {**CONTENT, "payoff": payoff})


@pytest.mark.parametrize("dash", ["—", "–", "-"])
def test_plain_names_with_a_dash_are_labels_when_the_answer_is_written_so(dash: str) -> None:
    reads(labelled("{T} " + dash + " {v}"))


def test_one_plain_name_with_a_dash_is_prose() -> None:
    """One line starting "Loop — ..." among prose is no label: three fields at least must be written so."""
    raw = "Loop — the retry loop spins forever when the pool is empty.\nGrip — nothing else."
    assert validate_output(raw).status == "failed"


def test_restructuredtext_field_lists_read_and_a_directive_ends_them() -> None:
    lines = labelled(":{l}: {v}").split("\n")
    wrapped = "\n".join(
        line[: line.rindex(" ", 0, 40)] + "\n    " + line[line.rindex(" ", 0, 40) + 1 :] for line in lines
    )
    result = validate_output("Note\n====\n\n" + wrapped + "\n\n.. note:: Generated by the on-call assistant.\n")
    assert result.status == "valid", result.errors
    assert {name: " ".join(value.split()) for name, value in result.loop_output.items()} == CONTENT


def test_an_empty_element_after_a_sections_text_is_markup() -> None:
    """SSML's pauses (``<break time="500ms"/>``) and a ``<br/>`` after each section are no content."""
    body = "\n".join(f'    {line}<break time="500ms"/>' for line in labelled("{T}: {v}").split("\n"))
    reads('<speak version="1.0" xml:lang="en-US">\n' + body + "\n</speak>")
    reads("\n".join(line + "<br/>" for line in labelled("{T}: {v}").split("\n")))


@pytest.mark.parametrize(
    "block",
    [
        "> [!{kind}] {T}\n> {v}\n",  # GitHub's alerts, Obsidian's callouts
        "> [!{kind}]- {T}\n> {v}\n",  # a foldable callout
        '!!! {kind} "{T}"\n    {v}\n',  # Python-Markdown's admonitions (MkDocs)
        '??? {kind} "{T}"\n    {v}\n',  # a collapsible one
        ":::{kind} {T}\n{v}\n:::\n",  # a directive container (Docusaurus, VitePress)
    ],
)
@pytest.mark.parametrize("kind", ["note", "tip", "question"])
def test_a_titled_blocks_title_is_its_label_and_its_markup_no_text(block: str, kind: str) -> None:
    """Markdown's titled blocks: the type is a look the writer chose, the title names the section, and the block's
    quote markers, indentation and closing fence are no part of the value."""
    raw = "\n".join(block.format(kind=kind, T=name.title(), v=value) for name, value in CONTENT.items())
    result = validate_output(raw)
    assert result.ok and dict(result.loop_output) == CONTENT, result.loop_output


def test_a_quoted_answers_lines_lose_their_quote_markers() -> None:
    """An answer all in one block quote: a section wrapped over two quoted lines is one value without its markers."""
    grip = CONTENT["grip"].replace(", so", ",\n> so")
    raw = "\n".join(f"> **{name.title()}:** {value}" for name, value in {**CONTENT, "grip": grip}.items())
    result = validate_output(raw)
    assert result.ok and result.loop_output["grip"] == CONTENT["grip"].replace(", so", ",\nso")
