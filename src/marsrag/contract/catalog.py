"""The catalog of output formats the contract reads, each derived from the parser or document that defines it.

Two tables, both data:

- :data:`FORMATS`: how model families and prompt frameworks write an answer's fields as text (a tool call written
  as text, a framework's field markers, the answer forms of the contract's own template), the upstream parser or
  document each row mirrors, and the reading that finds its fields. Readings are few and general (see
  :data:`READINGS`): a JSON document wherever it sits in the markup, Python call syntax, keyed markup (a field name
  used as a key by any of the key syntaxes of :mod:`marsrag.contract._keyed`), labelled sections, and the rest.
  A format is a row, not a code path: the row says which reading finds its fields, and its tests
  (``tests/contract/test_catalog.py``, examples built from the upstream parser's own tests and docs, reworded to
  the five fields) prove that it does.
- :data:`CHAT_TEMPLATES`: each chat template's end-of-turn and turn-start tokens, which decide where a model's
  answer ends (:mod:`marsrag.contract._turns`).

The sources read, and their versions, are :data:`SOURCES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

#: The upstream sources the rows mirror, as read (2026-12-05).
SOURCES: Final[tuple[str, ...]] = (
    "vLLM 0.34.0 (sdist): vllm/tool_parsers, vllm/parser, vllm/reasoning, the Rust ports in rust/src/parser, and "
    "examples/tool_chat_template_*.jinja",
    "SGLang 0.5.23: sglang/srt/function_call, sglang/srt/parser/reasoning_parser.py",
    "llama.cpp common/chat.cpp and common/chat-parser.cpp (as vendored by llama-cpp-python 0.3.16 and 0.3.36, and "
    "ggml-org/llama.cpp 05e5139a), including its XML tool-call engine's format table and models/templates",
    "DSPy 4ed377ee: dspy/adapters/{chat,json,xml,baml}_adapter.py",
    "Instructor cc679553: instructor/mode.py, function_calls.py, process_response.py, utils.py",
    "smolagents e3a5b899: src/smolagents/agents.py, utils.py, prompts/*.yaml",
    "BAML: engine/baml-lib/jsonish (entry.rs, markdown_parser.rs, fixing_parser)",
    "LangChain langchain_core/utils/json.py; anthropic-tools prompt_constructors.py; Google's Gemma and "
    "FunctionGemma function-calling guides; Outlines' JSON-schema compiler",
    "LLaMA-Factory ff6d4d12: src/llamafactory/data/template.py (every register_template: its stop_words, the "
    "special tokens of its format_user/format_assistant/format_system/format_prefix slots)",
)

#: How a format's fields are found (each reading is one reader of :mod:`marsrag.contract._text`):
#:
#: - ``json``: a JSON document in the markup (in a fence, after a marker, between tags, in a list of calls), its
#:   answer found through envelopes (a call's ``arguments``/``parameters``/``args``, a one-key wrapper, a JSON string);
#: - ``python_call``: keyword arguments of a call (``final_answer(hook="...", ...)``), literals only;
#: - ``keyed``: a field name used as a key by markup (``<parameter=hook>``, ``<parameter name="hook">``,
#:   ``<arg_key>hook</arg_key><arg_value>``, ``<hook>``, ``[[ ## hook ## ]]``, ``hook:<escape>``...), its value the
#:   text the key introduces, markup removed;
#: - ``labels``: labelled sections (``HOOK: ...``, ``## Hook``), the contract template's own form;
#: - ``yaml``, ``table``, ``printed`` (a model's repr), ``html``: the other readings of plain answers;
#: - ``shape``: the last resort, keys in the shape the text itself gives the five field names (the marks before and
#:   after each, the separator that follows: ``[hook] => ...``, ``$hook``, ``:hook "..."``), each value a string
#:   literal or one line (:mod:`marsrag.contract._inferred`).
Reading = Literal["json", "python_call", "keyed", "labels", "yaml", "table", "printed", "html", "shape"]
READINGS: Final[tuple[Reading, ...]] = (
    "json",
    "python_call",
    "keyed",
    "labels",
    "yaml",
    "table",
    "printed",
    "html",
    "shape",
)


@dataclass(frozen=True, slots=True)
class Format:
    """One way an answer's fields are written: who writes it, where it is defined, how its fields are found."""

    id: str
    families: str
    upstream: str
    reading: Reading
    #: The literal markup around the fields (start and end marks, separators), as the upstream parser names it.
    markup: str


_V = "vllm: vllm/tool_parsers/"
_S = "sglang: srt/function_call/"
_L = "llama.cpp: common/chat-parser.cpp "

#: Every format, in no particular order (the readers try their readings in their own order, cheapest first).
FORMATS: Final[tuple[Format, ...]] = (
    # -- tool calls written as text, JSON arguments -----------------------------------------------------------
    Format(
        "hermes",
        "Hermes 2 Pro/3, Qwen2.5, QwQ, Qwen3, Xiaomi MiMo (llama.cpp)",
        f"{_V}hermes_tool_parser.py; {_S}qwen25_detector.py; {_L}common_chat_parse_hermes_2_pro",
        "json",
        '<tool_call>{"name": ..., "arguments": {...}}</tool_call>',
    ),  # fmt: skip
    Format(
        "longcat",
        "Meituan LongCat-Flash",
        f"{_V}longcat_tool_parser.py",
        "json",
        "<longcat_tool_call>{...}</longcat_tool_call>",
    ),  # fmt: skip
    Format(
        "ernie45",
        "Baidu ERNIE-4.5",
        f"{_V}ernie45_tool_parser.py",
        "json",
        "...</think> <tool_call>{...}</tool_call> or <response>...</response>",
    ),  # fmt: skip
    Format(
        "granite4",
        "IBM Granite 4",
        f"{_V}granite4_tool_parser.py",
        "json",
        '<tool_call>{"name": ..., "arguments": "<JSON as a string>"}</tool_call>',
    ),  # fmt: skip
    Format(
        "granite",
        "IBM Granite 3.x",
        f"vllm: vllm/parser/granite.py; {_L}common_chat_parse_granite",
        "json",
        '<|tool_call|>[{"name": ..., "arguments": {...}}]',
    ),  # fmt: skip
    Format(
        "granite_20b_fc",
        "granite-20b-functioncalling",
        f"{_V}granite_20b_fc_tool_parser.py",
        "json",
        "<function_call> {...}",
    ),  # fmt: skip
    Format(
        "internlm",
        "InternLM2/2.5, Intern-S1",
        f"{_V}internlm2_tool_parser.py; {_S}internlm_detector.py",
        "json",
        '<|action_start|><|plugin|>{"name": ..., "parameters": {...}}<|action_end|>',
    ),  # fmt: skip
    Format("jamba", "AI21 Jamba 1.5/1.6", f"{_V}jamba_tool_parser.py", "json", "<tool_calls>[{...}]</tool_calls>"),
    Format(
        "hunyuan_a13b",
        "Tencent Hunyuan-A13B",
        f"{_V}hunyuan_a13b_tool_parser.py",
        "json",
        "<think>...</think><answer><tool_calls>[{...}]</tool_calls></answer>",
    ),  # fmt: skip
    Format(
        "llama3_json",
        "Llama 3.1/3.2/3.3, Llama 4 (JSON), Gemma 3 (JSON prompt)",
        f"vllm: vllm/parser/llama_json.py; {_S}llama32_detector.py; {_L}common_chat_parse_llama_3_1",
        "json",
        '<|python_tag|>{"name": ..., "parameters": {...}}<|eom_id|>',
    ),  # fmt: skip
    Format(
        "mistral",
        "Mistral 7B v0.3, Nemo, Small, Large, Devstral, Magistral, Ministral",
        f"{_V}mistral_tool_parser.py; {_S}mistral_detector.py; {_L}common_chat_parse_mistral_nemo",
        "json",
        "[TOOL_CALLS][{...}] or [TOOL_CALLS]name[ARGS]{...} or [TOOL_CALLS]name[CALL_ID]id[ARGS]{...}",
    ),  # fmt: skip
    Format(
        "phi4_mini",
        "Phi-4-mini, Firefunction v2",
        f"{_V}phi4mini_tool_parser.py; {_L}firefunction_v2",
        "json",
        'functools[{"name": ..., "arguments": {...}}]',
    ),  # fmt: skip
    Format("xlam", "Salesforce xLAM", f"{_V}xlam_tool_parser.py", "json", '[{"name": ..., "arguments": {...}}]'),
    Format(
        "deepseek_v3",
        "DeepSeek-V3 (0324), DeepSeek-R1",
        f"{_V}deepseekv3_tool_parser.py; {_L}deepseek_r1",
        "json",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>name ```json {...} ```<｜tool▁call▁end｜>",
    ),  # fmt: skip
    Format(
        "deepseek_v31",
        "DeepSeek-V3.1",
        f"{_V}deepseekv31_tool_parser.py; {_L}deepseek_v3_1",
        "json",
        "<｜tool▁call▁begin｜>name<｜tool▁sep｜>{...}<｜tool▁call▁end｜>",
    ),  # fmt: skip
    Format(
        "kimi_k2",
        "Moonshot Kimi K2, K2 Thinking",
        f"vllm: vllm/parser/kimi_k2.py; {_S}kimik2_detector.py",
        "json",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.name:0<|tool_call_argument_begin|>{...}<|tool_call_end|>",
    ),  # fmt: skip
    Format(
        "minimax_m1",
        "MiniMax-M1, MiniMax-Text-01",
        "vllm: vllm/entrypoints/openai/tool_parsers/minimax_tool_parser.py",
        "json",
        '<tool_calls>\n{"name": ..., "arguments": {...}}\n</tool_calls>',
    ),  # fmt: skip
    Format(
        "harmony",
        "gpt-oss (harmony)",
        f"{_V}gptoss_tool_parser.py; vllm/parser/harmony.py; {_L}gpt_oss",
        "json",
        "<|channel|>commentary to=functions.name <|constrain|>json<|message|>{...}<|call|>",
    ),  # fmt: skip
    Format(
        "command_r7b",
        "Cohere Command R7B, Command A",
        f"vllm: vllm/parser/cohere_command.py; {_L}command_r7b",
        "json",
        '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": ..., "parameters": {...}}]<|END_ACTION|>',
    ),  # fmt: skip
    Format(
        "command_r",
        "Cohere Command R/R+ (2024 tool-use template)",
        "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
        "json",
        'Action: ```json [{"tool_name": ..., "parameters": {...}}] ```',
    ),  # fmt: skip
    Format(
        "gigachat3",
        "Sber GigaChat 3/3.1",
        f"{_V}gigachat3_tool_parser.py",
        "json",
        "function call<|role_sep|>\n{...} or <|function_call|>{...}",
    ),  # fmt: skip
    Format(
        "apertus",
        "Swiss AI Apertus",
        f"{_V}apertus_tool_parser.py; {_S}apertus2509_detector.py",
        "json",
        '<|tools_prefix|>[{"name": {...}}]<|tools_suffix|>',
    ),  # fmt: skip
    Format(
        "functionary_v3_1",
        "Functionary v3.1 (Llama 3.1)",
        f"{_L}functionary_v3_1_llama_3_1",
        "json",
        "<function=name>{...}</function>",
    ),  # fmt: skip
    Format("functionary_v3_2", "Functionary v3.2", f"{_L}functionary_v3_2", "json", ">>>name\n{...}"),
    Format(
        "generic",
        "llama.cpp generic tool calling (any model)",
        f"{_L}common_chat_parse_generic",
        "json",
        '{"tool_call": {"name": ..., "arguments": {...}}}',
    ),  # fmt: skip
    Format("nemotron_v2", "NVIDIA Nemotron Nano v2", f"{_L}nemotron_v2", "json", "<TOOLCALL>[{...}]</TOOLCALL>"),
    Format("apriel", "ServiceNow Apriel 1.5/1.6", f"{_L}apriel_1_5", "json", "<tool_calls>[{...}]</tool_calls>"),
    Format(
        "lfm2_json",
        "LiquidAI LFM2 (JSON tools)",
        f"{_L}lfm2; {_S}lfm2_detector.py",
        "json",
        "<|tool_call_start|>[{...}]<|tool_call_end|>",
    ),  # fmt: skip
    Format(
        "solar_open",
        "Upstage Solar Open",
        "upstage-Solar-Open-100B.jinja",
        "json",
        "<|tool_calls|><|tool_call:begin|>id<|tool_call:name|>name<|tool_call:args|>{...}<|tool_call:end|>",
    ),  # fmt: skip
    # -- tool calls written as text, Python call syntax -----------------------------------------------------
    Format(
        "pythonic",
        "Llama 3.2 (pythonic), ToolACE, Gemma 3 (pythonic)",
        f"{_V}pythonic_tool_parser.py; {_S}pythonic_detector.py",
        "python_call",
        '[final_answer(hook="...", grip="...")]',
    ),  # fmt: skip
    Format(
        "llama4_pythonic",
        "Llama 4 Scout/Maverick",
        f"{_V}llama4_pythonic_tool_parser.py",
        "python_call",
        "<|python_start|>[name(k=v, ...)]<|python_end|>",
    ),  # fmt: skip
    Format(
        "llama3_builtin",
        "Llama 3.1 built-in tools",
        f"{_L}llama_3_1 (with_builtin_tools)",
        "python_call",
        '<|python_tag|>name.call(k="v", ...)<|eom_id|>',
    ),  # fmt: skip
    Format(
        "olmo3",
        "AllenAI OLMo 3",
        f"{_V}olmo3_tool_parser.py",
        "python_call",
        "<function_calls>\nname(k=v)\n</function_calls>",
    ),
    Format(
        "lfm2",
        "LiquidAI LFM2/LFM2.5",
        f"{_V}lfm2_tool_parser.py",
        "python_call",
        "<|tool_call_start|>[name(k=v)]<|tool_call_end|>",
    ),  # fmt: skip
    Format(
        "code_agent",
        "smolagents CodeAgent and other code agents",
        "smolagents: src/smolagents/agents.py (final_answer tool)",
        "python_call",
        '```py\nfinal_answer(hook="...", ...)\n```',
    ),  # fmt: skip
    # -- tool calls written as text, keyed markup ------------------------------------------------------------
    Format(
        "qwen3_coder",
        "Qwen3-Coder, Qwen3.5, Nemotron 3, StepFun 3.5, Xiaomi MiMo V2, Step-5",
        f"vllm: vllm/parser/qwen3.py; {_S}qwen3_coder_detector.py; {_L}qwen3_coder_xml",
        "keyed",
        "<tool_call><function=name><parameter=key>value</parameter></function></tool_call>",
    ),  # fmt: skip
    Format(
        "seed_oss",
        "ByteDance Seed-OSS",
        f"vllm: vllm/parser/seed_oss.py; {_L}seed_oss",
        "keyed",
        "<seed:tool_call><function=name><parameter=key>value</parameter></function></seed:tool_call>",
    ),  # fmt: skip
    Format(
        "glm45",
        "Zhipu GLM-4.5/4.6/4.7, Poolside Laguna, Ling 3",
        f"{_S}glm4_moe_detector.py; {_L}glm_4_5",
        "keyed",
        "<tool_call>name<arg_key>key</arg_key><arg_value>value</arg_value></tool_call>",
    ),  # fmt: skip
    Format(
        "hunyuan",
        "Tencent HY v3/v4",
        f"{_V}hy_v3_tool_parser.py",
        "keyed",
        "<tool_call:sfx>name<tool_sep:sfx><arg_key:sfx>key</arg_key:sfx><arg_value:sfx>value</arg_value:sfx>",
    ),  # fmt: skip
    Format(
        "minimax_m2",
        "MiniMax-M2/M2.1",
        f"vllm: vllm/parser/minimax_m2.py; {_L}minimax_m2",
        "keyed",
        '<minimax:tool_call><invoke name="name"><parameter name="key">value</parameter></invoke>',
    ),  # fmt: skip
    Format(
        "minimax_m3",
        "MiniMax-M3",
        "vllm: rust/src/parser/src/tool/minimax_m3.rs",
        "keyed",
        "]<]minimax[>[<invoke name=...>]<]minimax[>[<key>value]<]minimax[>[</key>",
    ),  # fmt: skip
    Format(
        "deepseek_v32",
        "DeepSeek-V3.2, V4 (DSML)",
        "vllm: rust/src/parser/src/tool/deepseek_dsml/",
        "keyed",
        '<｜DSML｜invoke name="name"><｜DSML｜parameter name="key" string="true">value</｜DSML｜parameter>',
    ),  # fmt: skip
    Format(
        "step3",
        "StepFun Step-3",
        f"{_V}step3_tool_parser.py",
        "keyed",
        '<steptml:invoke name="name"><steptml:parameter name="key">value</steptml:parameter>',
    ),  # fmt: skip
    Format(
        "dots",
        "rednote dots.llm",
        f"{_V}dots_tool_parser.py",
        "keyed",
        '<dots_function_call><invoke name="name"><parameter name="key">value</parameter></invoke>',
    ),  # fmt: skip
    Format(
        "minicpm5",
        "OpenBMB MiniCPM5",
        f"{_V}minicpm5xml_tool_parser.py",
        "keyed",
        '<function name="name"><param name="key"><![CDATA[value]]></param></function>',
    ),  # fmt: skip
    Format(
        "muse",
        "Muse, Muse Glimmer",
        f"{_V}muse_tool_parser.py",
        "keyed",
        '<atem:function_calls><atem:invoke name="name"><atem:parameter name="key">value</atem:parameter>',
    ),  # fmt: skip
    Format(
        "anthropic_xml",
        "Claude-style XML tool use written as text",
        "anthropic-tools: tool_use_package/prompt_constructors.py",
        "keyed",
        '<function_calls><invoke name="name"><parameter name="key">value</parameter></invoke></function_calls>',
    ),  # fmt: skip
    Format(
        "kimi_k3",
        "Moonshot Kimi K3 (XTML)",
        f"{_V}kimi_k3_tool_parser.py",
        "keyed",
        '<|open|>call tool="name"<|sep|><|open|>argument key="key" type="string"<|sep|>value<|close|>argument<|sep|>',
    ),  # fmt: skip
    Format(
        "k2_horizon",
        "K2-Horizon",
        f"{_V}k2_horizon_tool_parser.py",
        "keyed",
        "<ifm|tool_call>name<ifm|arg_key>key</ifm|arg_key><ifm|arg_value>value</ifm|arg_value>",
    ),  # fmt: skip
    Format(
        "functiongemma",
        "Google FunctionGemma",
        f"{_V}functiongemma_tool_parser.py; FunctionGemma formatting guide",
        "keyed",
        "<start_function_call>call:name{key:<escape>value<escape>,...}<end_function_call>",
    ),  # fmt: skip
    Format(
        "gemma4",
        "Google Gemma 4",
        f"{_S}gemma4_detector.py; vllm/tool_parsers/gemma4_utils.py",
        "keyed",
        '<|tool_call>call:name{key:<|"|>value<|"|>,...}<tool_call|>',
    ),  # fmt: skip
    # -- prompt frameworks ------------------------------------------------------------------------------------
    Format(
        "dspy_chat",
        "DSPy ChatAdapter",
        "dspy: dspy/adapters/chat_adapter.py",
        "keyed",
        "[[ ## key ## ]]\nvalue ... [[ ## completed ## ]]",
    ),  # fmt: skip
    Format("dspy_xml", "DSPy XMLAdapter", "dspy: dspy/adapters/xml_adapter.py", "keyed", "<key>value</key>"),
    Format(
        "dspy_json",
        "DSPy JSONAdapter, Outlines, Instructor JSON/JSON_SCHEMA/MD_JSON, BAML",
        "dspy: dspy/adapters/json_adapter.py; instructor: instructor/mode.py; baml: jsonish parser",
        "json",
        '{"key": "value", ...} (bare, or in a ```json fence)',
    ),  # fmt: skip
    Format(
        "instructor_tools",
        "Instructor TOOLS/PARALLEL_TOOLS/ANTHROPIC_TOOLS written as text",
        "instructor: instructor/function_calls.py",
        "json",
        '{"name": "LoopOutput", "arguments": "{...}"} or {"type": "tool_use", "input": {...}}',
    ),  # fmt: skip
    Format(
        "react_final_answer",
        "CrewAI, LangChain ReAct (MRKL)",
        "langchain: FINAL_ANSWER_ACTION; crewai: parser.py",
        "json",
        "Thought: ... Final Answer: {...}",
    ),  # fmt: skip
    # -- the contract's own template and plain answers ------------------------------------------------------
    Format(
        "labels",
        "any model following the contract template",
        "spec: loop-contract.md section 3",
        "labels",
        "HOOK: ...\nGRIP: ... (headings, bold, numbered, translated labels)",
    ),  # fmt: skip
    Format(
        "xml_tags",
        "Claude-style prompts, DSPy XMLAdapter",
        "spec: loop-contract.md section 5",
        "keyed",
        "<hook>...</hook>",
    ),
    Format(
        "apple_plist",
        "Apple property lists (plutil -convert xml1, NSDictionary writeToFile), key/value element pairs",
        "apple: PropertyList-1.0.dtd (dict: alternating key and value elements)",
        "keyed",
        "<dict><key>hook</key><string>...</string>...</dict>",
    ),
    Format(
        "bracket_tags",
        "MetaGPT ActionNode, square-bracket section markers",
        "metagpt: metagpt/actions/action_node.py ([CONTENT]...[/CONTENT])",
        "keyed",
        "[hook]...[/hook] or [HOOK] ... (each value to its closing mark, else to the next key)",
    ),  # fmt: skip
    Format("yaml", "YAML answers", "YAML 1.2", "yaml", "hook: ...\ngrip: ..."),
    Format("table", "Markdown tables", "GitHub-flavoured Markdown", "table", "| Section | Content |"),
    Format("printed", "a printed pydantic model or dataclass", "Python repr", "printed", "LoopOutput(hook='...', ...)"),
    Format("html", "HTML answers", "HTML 5", "html", "<h2>Hook</h2><p>...</p>"),
    # -- values printed by a language's own dump of a mapping: keys in the shape the printer gives them ------------
    Format("php_print_r", "PHP print_r", "php.net: function.print-r", "shape", "Array\n(\n    [hook] => ...\n)"),
    Format(
        "php_var_dump",
        "PHP var_dump",
        "php.net: function.var-dump",
        "shape",
        'array(5) {\n  ["hook"]=>\n  string(61) "..."\n}',
    ),  # fmt: skip
    Format("perl_dumper", "Perl Data::Dumper", "perldoc: Data::Dumper", "shape", "$VAR1 = {\n  'hook' => '...',\n};"),
    Format("r_list", "R's print of a named list", "R: print.default (list components)", "shape", '$hook\n[1] "..."'),
    Format("edn", "Clojure EDN maps", "edn-format.org", "shape", '{:hook "..." :grip "..."}'),
    Format(
        "erlang_map", "Erlang and Elixir ~p maps", "erlang.org: io format ~p", "shape", '#{<<"hook">> => <<"...">>}'
    ),
    Format(
        "redis_reply",
        "redis-cli replies (HGETALL, XRANGE)",
        "redis.io: RESP, redis-cli",
        "shape",
        '1) "hook"\n2) "..."',
    ),
    Format(
        "to_string",
        "Kotlin data classes, Java records, C# records (toString)",
        "kotlinlang.org: data classes; JLS 8.10.3",
        "shape",
        "LoopOutput(hook=..., grip=...)",
    ),  # fmt: skip
    Format("latex_items", "LaTeX description lists", "LaTeX: description environment", "shape", "\\item[Hook] ..."),
)


@dataclass(frozen=True, slots=True)
class ChatTemplate:
    """One chat template's turn boundaries: the tokens that end the assistant's turn, and those that start one."""

    families: str
    source: str
    ends: tuple[str, ...]
    starts: tuple[str, ...] = ()
    #: Tokens that end a message, not the turn, in this template (harmony's ``<|end|>``).
    message_ends: tuple[str, ...] = ()
    harmony: bool = False
    #: Tokens a whole sequence opens with (``<|begin_of_text|>``): removed wherever they are, but ending nothing,
    #: since a log or an echo shows them where the prompt began, before the answer, not as a turn the model wrote.
    prefixes: tuple[str, ...] = ()
    #: Tokens this template's vocabulary writes a line break with (rinna's ``<NL>``): a line break wherever they are.
    line_breaks: tuple[str, ...] = ()


#: The chat templates whose special tokens a server may leave in the text.
CHAT_TEMPLATES: Final[tuple[ChatTemplate, ...]] = (
    ChatTemplate(
        "ChatML: Qwen, SmolLM2, Hermes, Yi, InternLM, Kimi K2",
        "Qwen2.5 / SmolLM2 chat_template",
        ends=("<|im_end|>",),
        # Kimi's header for the assistant (LLaMA-Factory kimi_vl, moonlight): after content, another assistant turn.
        starts=("<|im_start|>", "<|im_user|>", "<|im_system|>", "<|im_assistant|>"),
    ),  # fmt: skip
    ChatTemplate(
        "Llama 3.x",
        "meta-llama Llama-3.1 chat template; vllm/parser/llama_json.py",
        ends=("<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"),
        starts=("<|start_header_id|>",),
    ),  # fmt: skip
    ChatTemplate(
        "Llama 4", "tool_chat_template_llama4_pythonic.jinja", ends=("<|eot|>", "<|eom|>"), starts=("<|header_start|>",)
    ),  # fmt: skip
    ChatTemplate(
        "Gemma 2/3, FunctionGemma", "gemma chat template", ends=("<end_of_turn>", "<eos>"), starts=("<start_of_turn>",)
    ),  # fmt: skip
    ChatTemplate("Gemma 4", "tool_chat_template_gemma4.jinja", ends=("<turn|>",), starts=("<|turn>",)),
    ChatTemplate(
        "Phi-3, Phi-4, Apriel, Solar Open",
        "Phi-3 chat template",
        ends=("<|end|>", "<|endoftext|>"),
        # After content, the template's assistant header starts another assistant turn the model wrote on into.
        starts=("<|user|>", "<|system|>", "<|assistant|>"),
    ),  # fmt: skip
    ChatTemplate(
        "Mistral, Llama 2, Mistral Small 3",
        "mistral_common; Llama 2 chat template; LLaMA-Factory mistral_small",
        ends=("</s>",),
        starts=("[INST]", "[SYSTEM_PROMPT]"),
    ),  # fmt: skip
    ChatTemplate(
        "DeepSeek V3/R1",
        "DeepSeek-V3 chat template; LLaMA-Factory deepseek3, deepseekr1",
        ends=("<｜end▁of▁sentence｜>",),
        starts=("<｜User｜>", "<｜Assistant｜>"),
    ),  # fmt: skip
    ChatTemplate(
        "Cohere Command R/A",
        "c4ai-command-r chat template",
        ends=("<|END_OF_TURN_TOKEN|>",),
        starts=("<|START_OF_TURN_TOKEN|>",),
    ),  # fmt: skip
    ChatTemplate(
        "gpt-oss (harmony)",
        "vllm/parser/harmony.py",
        ends=("<|return|>", "<|call|>"),
        message_ends=("<|end|>",),
        harmony=True,
    ),  # fmt: skip
    ChatTemplate(
        "ChatGLM3, GLM-4/4.5/4.7, GLM-4.1V/4.5V, GLM-Z1, GLM-OCR",
        "glm4 chat template (generation stops on the next role); LLaMA-Factory chatglm3, glm4*, glmz1, glm_ocr, aeva",
        ends=("<|observation|>",),
        # GLM-4.1V/4.5V also stop on "</answer>": plain markup an answer may hold, so it is not taken for a token.
        starts=("<|user|>",),
        prefixes=("[gMASK]", "<sop>"),
    ),  # fmt: skip
    ChatTemplate("Granite 3/4", "granite chat template", ends=("<|end_of_text|>",), starts=("<|start_of_role|>",)),
    ChatTemplate(
        "EXAONE 3.0/3.5/4.0",
        "LGAI-EXAONE chat template",
        ends=("[|endofturn|]",),
        starts=("[|system|]", "[|user|]", "[|assistant|]"),
    ),  # fmt: skip
    ChatTemplate(
        "InternLM (first generation chat)",
        "internlm-chat-7b build_inputs: <|User|>:...<eoh> <|Bot|>:...<eoa>",
        ends=("<eoa>",),
        starts=("<|User|>", "<|System|>"),
    ),  # fmt: skip
    ChatTemplate("Seed-OSS", "vllm/parser/seed_oss.py", ends=("<seed:eos>",), starts=("<seed:bos>",)),
    ChatTemplate(
        "MiniMax-M1, MiniMax-Text-01",
        "MiniMax-M1.jinja; LLaMA-Factory minimax1",
        ends=("<end_of_sentence>",),
        starts=("<beginning_of_sentence>",),
    ),  # fmt: skip
    ChatTemplate("Apertus", "common_chat_parse_apertus", ends=("<|assistant_end|>",)),
    ChatTemplate("Kimi K3", "kimi_k3_tool_parser.py", ends=("<|end_of_msg|>",)),
    ChatTemplate("SmolVLM, Idefics", "SmolVLM chat template", ends=("<end_of_utterance>",)),
    ChatTemplate(
        "OpenChat 3.5/3.6, Starling-LM",
        "openchat chat template: GPT4 Correct User: ...<|end_of_turn|>GPT4 Correct Assistant:",
        ends=("<|end_of_turn|>",),
    ),  # fmt: skip
    ChatTemplate("GPT-2 family, Falcon, base models", "tokenizer eos", ends=("<|endoftext|>",)),
    # -- from LLaMA-Factory's template registry: the templates whose tokens no row above lists ---------------------
    # Ends: the stop words, the token the assistant's message ends with, and the end marks of a user's or a
    # system's message (written after the answer, the model went on as that role). Starts: the tokens a user's,
    # system's or assistant's turn opens with, and the prefix a conversation opens with (after content, a new one).
    ChatTemplate(
        "TeleChat, TeleChat 2",
        "LLaMA-Factory telechat2; the eos <_end> as ms-swift's and OpenCompass' telechat templates name it",
        ends=("<_end>",),
        starts=("<_user>", "<_system>", "<_bot>"),
    ),  # fmt: skip
    ChatTemplate(
        "Tencent Hunyuan (hunyuan, HY dense 7B)",
        "LLaMA-Factory hunyuan, hy_dense_7b",
        ends=("<|eos|>", "<|extra_0|>", "<|extra_4|>"),
        prefixes=("<|startoftext|>",),
    ),  # fmt: skip
    ChatTemplate(
        "Tencent Hunyuan small, HY dense 1.8B, HY 3",
        "LLaMA-Factory hunyuan_small, hy_dense_1_8b, hy3",
        ends=("<｜hy_eos｜>", "<｜hy_place▁holder▁no▁2｜>", "<｜hy_place▁holder▁no▁3｜>", "<｜hy_place▁holder▁no▁8｜>"),
        starts=("<｜hy_User｜>", "<｜hy_Assistant｜>"),
        prefixes=("<｜hy_begin▁of▁sentence｜>",),
    ),  # fmt: skip
    ChatTemplate(
        "Baidu ERNIE 4.5 (non-ChatML), ERNIE 4.5 VL",
        "LLaMA-Factory ernie_nothink, ernie_vl",
        ends=("<|end_of_sentence|>",),
        prefixes=("<|begin_of_sentence|>",),
    ),  # fmt: skip
    ChatTemplate("DeepSeek Coder", "LLaMA-Factory deepseekcoder", ends=("<|EOT|>",)),
    ChatTemplate(
        "rednote dots.ocr",
        "LLaMA-Factory dots_ocr",
        ends=("<|endofassistant|>", "<|endofuser|>", "<|endofsystem|>"),
    ),  # fmt: skip
    ChatTemplate(
        "Ant Ling/Bailing, Ling 2.0",
        "LLaMA-Factory bailing, bailing_v2",
        ends=("<|role_end|>",),
        starts=("<role>",),
    ),  # fmt: skip
    ChatTemplate(
        "MiniMax-M2",
        "LLaMA-Factory minimax2",
        ends=("[e~[",),
        starts=("]~b]", "]~!b["),
    ),  # fmt: skip
    ChatTemplate("Yuan 2", "LLaMA-Factory yuan", ends=("<eod>", "<sep>")),
    ChatTemplate(
        "rinna japanese-gpt-neox instruction-sft",
        "rinna/japanese-gpt-neox-3.6b-instruction-sft model card: ユーザー:/システム: turns joined by <NL>",
        ends=("</s>",),
        line_breaks=("<NL>",),
    ),  # fmt: skip
    ChatTemplate(
        "YaYi",
        "LLaMA-Factory yayi: <|Human|>:/<|YaYi|>: turns, stop word <|End|>",
        ends=("<|End|>",),
        starts=("<|Human|>", "<|YaYi|>"),
    ),  # fmt: skip
    ChatTemplate(
        "Tencent Youtu-LLM, Youtu-VL",
        "LLaMA-Factory youtu, youtu_vl",
        ends=("<|end_of_text|>",),
        starts=("<|Assistant|>",),
        prefixes=("<|begin_of_text|>",),
    ),  # fmt: skip
    ChatTemplate(
        "llama.cpp command line (main, llama-cli, llamafile --cli)",
        "llama.cpp examples/main/main.cpp: the end-of-generation token is printed as ' [end of text]'",
        ends=("[end of text]",),
    ),  # fmt: skip
)


def render_markdown() -> str:
    """The catalog as the Markdown page ``docs/formats.md`` (generated: ``make docs-cli`` rewrites it)."""
    lines = [
        "# Output formats the contract reads",
        "",
        "Generated from `marsrag.contract.catalog` by `make docs-cli`; do not edit by hand. Each row is tested with",
        "examples built from the upstream parser's own tests and docs (`tests/contract/catalog_examples.py`).",
        "A format no row describes is still read when its keys use any of the key syntaxes of",
        "`marsrag.contract._keyed` (the general last resort); see [The Loop Contract](contract.md).",
        "",
        "Sources read:",
        "",
        *(f"- {source}" for source in SOURCES),
        "",
        "## Formats",
        "",
        "| Format | Families | Upstream | Fields found by | Markup |",
        "|---|---|---|---|---|",
    ]
    for row in FORMATS:
        cells = (row.id, row.families, row.upstream, row.reading, f"`{row.markup}`")
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    lines += [
        "",
        "## Chat templates: where the answer ends",
        "",
        "The answer ends at the first of these tokens written after content; what follows is neither content nor a",
        "later candidate. In a harmony answer `<|end|>` ends a message, not the turn. Every token listed is also",
        "removed wherever it is glued, whatever its shape. The rows cover the turn tokens of every template",
        "LLaMA-Factory registers.",
        "",
        "| Families | Source | Ends the turn | Starts a turn | Opens a sequence (removed, ends nothing) | Line break |",
        "|---|---|---|---|---|---|",
    ]
    for template in CHAT_TEMPLATES:
        tokens_cells = [
            " ".join(f"`{token}`" for token in tokens) or "-"
            for tokens in (template.ends, template.starts, template.prefixes, template.line_breaks)
        ]
        lines.append(
            "| " + " | ".join(_cell(cell) for cell in (template.families, template.source, *tokens_cells)) + " |"
        )
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "\\n")


if __name__ == "__main__":
    print(render_markdown(), end="")
