"""Examples of every catalogued format (:data:`marsrag.contract.catalog.FORMATS`), one or more per row.

Each is built from the upstream parser's own tests and docs (the markup as the parser defines it), reworded to
a call named ``final_answer`` (or the schema's class name) carrying the five fields; the values are ours.
"""

from __future__ import annotations

import json

A = {
    "hook": "Checkout latency breached its SLO at 14:05 in three regions.",
    "grip": "The p99 tripled right after the cache deploy went out.",
    "payoff": "Rolling back the cache change restores p99 within ten minutes.",
    "reinforce": "Error budgets only help if we act on them fast.",
    "loop": "Should we roll back the cache change now or wait for the canary?",
}
B = {
    "hook": "Signups fell by forty percent on Tuesday.",
    "grip": "The new form rejects plus-addressed emails that many users have.",
    "payoff": "Relaxing the email validator won back most of the lost signups.",
    "reinforce": "Tiny validation bugs cost real users, so test with real addresses.",
    "loop": "Which other form fields reject input that is actually valid?",
}
FIELDS = tuple(A)


def args(values: dict[str, str]) -> str:
    return json.dumps(values)


def kwargs(values: dict[str, str], quote: str = '"') -> str:
    return ", ".join(f"{name}={quote}{value}{quote}" for name, value in values.items())


def xml(values: dict[str, str], open_: str, close: str, sep: str = "\n") -> str:
    """Each field as ``open_ + value + close``, ``{n}`` in the marks replaced by the field name."""
    return sep.join(open_.format(n=name) + value + close.format(n=name) for name, value in values.items())


def gemma(values: dict[str, str], quote: str) -> str:
    return ",".join(f"{name}:{quote}{value}{quote}" for name, value in values.items())


DSPY = "\n\n".join(f"[[ ## {name} ## ]]\n{value}" for name, value in A.items())
GEMMA4_QUOTE = '<|"|>'
NS = "antml" + ":"  # the namespaced spelling of Anthropic-style tags

#: row id -> [(raw text, the values it carries)]
EXAMPLES: dict[str, list[tuple[str, dict[str, str]]]] = {
    "hermes": [
        (f'<tool_call>\n{{"name": "final_answer", "arguments": {args(A)}}}\n</tool_call>', A),
        (
            f'<think>The user wants the brief as a call.</think>\n<tool_call>{{"name": "LoopOutput", "arguments": {args(B)}}}</tool_call>',
            B,
        ),
    ],
    "longcat": [(f'<longcat_tool_call>{{"name": "final_answer", "arguments": {args(A)}}}</longcat_tool_call>', A)],
    "ernie45": [
        (
            f'The user needs a brief.</think>\n\n<tool_call>\n{{"name": "final_answer", "arguments": {args(A)}}}\n</tool_call>',
            A,
        )
    ],
    "granite4": [(f'<tool_call>{{"name": "final_answer", "arguments": {json.dumps(args(A))}}}</tool_call>', A)],
    "granite": [
        (f'<|tool_call|>[{{"name": "final_answer", "arguments": {args(A)}}}]', A),
        (f'<tool_call>[{{"name": "final_answer", "arguments": {args(B)}}}]', B),
    ],
    "granite_20b_fc": [(f'<function_call> {{"name": "final_answer", "arguments": {args(A)}}}', A)],
    "internlm": [
        (f'<|action_start|><|plugin|>\n{{"name": "final_answer", "parameters": {args(A)}}}<|action_end|>', A),
        (f'<|action_start|> <|plugin|>\n{{"name": "final_answer", "arguments": {args(B)}}}<|action_end|>', B),
    ],
    "jamba": [(f'<tool_calls>[{{"name": "final_answer", "arguments": {args(A)}}}]</tool_calls>', A)],
    "hunyuan_a13b": [
        (
            f'<think>\nNeed the brief.\n</think>\n<answer>\n<tool_calls>[{{"name": "final_answer", "arguments": {args(A)}}}]</tool_calls>\n</answer>',
            A,
        )
    ],
    "llama3_json": [
        (f'{{"name": "final_answer", "parameters": {args(A)}}}', A),
        (f'<|python_tag|>{{"type": "function", "name": "final_answer", "parameters": {args(B)}}}<|eom_id|>', B),
    ],
    "mistral": [
        (f'[TOOL_CALLS] [{{"name": "final_answer", "arguments": {args(A)}, "id": "a1B2c3D4e"}}]</s>', A),
        (f"[TOOL_CALLS]final_answer[ARGS]{args(B)}</s>", B),
        (f"[TOOL_CALLS]final_answer[CALL_ID]k3Zp9Qa1B[ARGS]{args(A)}", A),
        (f'[TOOL_CALLS][{{"name": "final_answer", "arguments": {json.dumps(args(B))}}}]', B),
    ],
    "phi4_mini": [
        (f'functools[{{"name": "final_answer", "arguments": {args(A)}}}]', A),
        (f' functools[{{"name": "final_answer", "arguments": {args(B)}}}]<|eot_id|>', B),
    ],
    "xlam": [
        (f'[{{"name": "final_answer", "arguments": {args(A)}}}]', A),
        (f'```json\n[{{"name": "final_answer", "arguments": {args(B)}}}]\n```', B),
    ],
    "deepseek_v3": [
        (
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>final_answer\n```json\n"
            f"{args(A)}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>",
            A,
        )
    ],
    "deepseek_v31": [
        (
            f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>final_answer<｜tool▁sep｜>{args(B)}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            B,
        )
    ],
    "kimi_k2": [
        (
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.final_answer:0<|tool_call_argument_begin|>"
            f"{args(A)}<|tool_call_end|><|tool_calls_section_end|><|im_end|>",
            A,
        )
    ],
    "minimax_m1": [
        (f'<tool_calls>\n{{"name": "final_answer", "arguments": {args(A)}}}\n</tool_calls><end_of_sentence>', A)
    ],
    "harmony": [
        (
            "<|channel|>analysis<|message|>Need the five-part brief.<|end|><|start|>assistant<|channel|>commentary "
            f"to=functions.final_answer <|constrain|>json<|message|>{args(A)}<|call|>",
            A,
        ),
        (f"<|start|>assistant to=functions.final_answer<|channel|>commentary json<|message|>{args(B)}<|call|>", B),
        (f"<|channel|>final<|message|>{args(A)}<|return|>", A),
    ],
    "command_r7b": [
        (
            "<|START_THINKING|>The user wants the brief.<|END_THINKING|><|START_ACTION|>[\n"
            f'    {{"tool_call_id": "0", "tool_name": "final_answer", "parameters": {args(A)}}}\n]<|END_ACTION|><|END_OF_TURN_TOKEN|>',
            A,
        )
    ],
    "command_r": [
        (
            f'Action:\n```json\n[\n    {{\n        "tool_name": "final_answer",\n        "parameters": {args(B)}\n    }}\n]\n```',
            B,
        )
    ],
    "gigachat3": [
        (f'function call<|role_sep|>\n{{"name": "final_answer", "arguments": {args(A)}}}', A),
        (f'<|function_call|>{{"name": "final_answer", "arguments": {args(B)}}}', B),
    ],
    "apertus": [(f'<|tools_prefix|>[{{"final_answer": {args(A)}}}]<|tools_suffix|>', A)],
    "functionary_v3_1": [(f"<function=final_answer>{args(A)}</function><|eom_id|>", A)],
    "functionary_v3_2": [(f"all\nHere is the brief.>>>final_answer\n{args(B)}", B), (f"final_answer\n{args(A)}", A)],
    "generic": [(f'{{"tool_call": {{"name": "final_answer", "arguments": {args(A)}}}}}', A)],
    "nemotron_v2": [(f'<TOOLCALL>[{{"name": "final_answer", "arguments": {args(A)}}}]</TOOLCALL>', A)],
    "apriel": [
        (
            f'<thinking>Brief time.</thinking><tool_calls>[{{"name": "final_answer", "arguments": {args(A)}}}]</tool_calls>',
            A,
        )
    ],
    "lfm2_json": [(f'<|tool_call_start|>[{{"name": "final_answer", "arguments": {args(B)}}}]<|tool_call_end|>', B)],
    "solar_open": [
        (
            f"<|tool_calls|><|tool_call:begin|>c1<|tool_call:name|>final_answer<|tool_call:args|>{args(A)}<|tool_call:end|><|calls|>",
            A,
        )
    ],
    "pythonic": [(f"[final_answer({kwargs(A)})]", A), (f"[final_answer({kwargs(B, quote=chr(39))})]", B)],
    "llama4_pythonic": [(f"<|python_start|>[final_answer({kwargs(A)})]<|python_end|><|eot|>", A)],
    "llama3_builtin": [(f"<|python_tag|>final_answer.call({kwargs(A)})<|eom_id|>", A)],
    "olmo3": [(f"<function_calls>\nfinal_answer({kwargs(A)})\n</function_calls>", A)],
    "lfm2": [(f"<|tool_call_start|>[final_answer({kwargs(A)})]<|tool_call_end|>", A)],
    "code_agent": [
        (f"Thought: I have all five parts.\n<code>\nfinal_answer({kwargs(A)})\n</code>", A),
        (f"Thought: Done.\nCode:\n```py\nfinal_answer({args(B)})\n```<end_code>", B),
        (f"```tool_code\nprint(default_api.final_answer({kwargs(B, quote=chr(39))}))\n```", B),
    ],
    "qwen3_coder": [
        (
            "<tool_call>\n<function=final_answer>\n"
            + xml(A, "<parameter={n}>\n", "\n</parameter>")
            + "\n</function>\n</tool_call>",
            A,
        ),
        (
            "<tool_call><function=final_answer>"
            + xml(B, "<parameter={n}>", "</parameter>", "")
            + "</function></tool_call>",
            B,
        ),
    ],
    "seed_oss": [
        (
            "<seed:think>Budget check done.</seed:think>\n<seed:tool_call>\n<function=final_answer>\n"
            + xml(B, "<parameter={n}>", "</parameter>")
            + "\n</function>\n</seed:tool_call><seed:eos>",
            B,
        )
    ],
    "glm45": [
        (
            "<tool_call>final_answer\n"
            + xml(A, "<arg_key>{n}</arg_key>\n<arg_value>", "</arg_value>")
            + "\n</tool_call>",
            A,
        ),
        (
            "<tool_call>final_answer"
            + xml(B, "<arg_key>{n}</arg_key><arg_value>", "</arg_value>", "")
            + "</tool_call>",
            B,
        ),
    ],
    "hunyuan": [
        (
            "<tool_calls>\n<tool_call>final_answer<tool_sep>\n"
            + xml(A, "<arg_key>{n}</arg_key><arg_value>", "</arg_value>")
            + "\n</tool_call>\n</tool_calls>",
            A,
        ),
        (
            "<tool_call:6124c78e>final_answer<tool_sep:6124c78e>"
            + xml(B, "<arg_key:6124c78e>{n}</arg_key:6124c78e><arg_value:6124c78e>", "</arg_value:6124c78e>", "")
            + "</tool_call:6124c78e>",
            B,
        ),
    ],
    "minimax_m2": [
        (
            '<minimax:tool_call>\n<invoke name="final_answer">\n'
            + xml(A, '<parameter name="{n}">', "</parameter>")
            + "\n</invoke>\n</minimax:tool_call>",
            A,
        )
    ],
    "minimax_m3": [
        (
            ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="final_answer">\n'
            + xml(A, "]<]minimax[>[<{n}>", "]<]minimax[>[</{n}>")
            + "\n]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>",
            A,
        )
    ],
    "deepseek_v32": [
        (
            '\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="final_answer">\n'
            + xml(A, '<｜DSML｜parameter name="{n}" string="true">', "</｜DSML｜parameter>")
            + "\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            A,
        ),
        (
            '<｜DSML｜ calls>\n<｜DSML｜ invoke name="final_answer">\n'
            + xml(B, '<｜DSML｜ parameter name="{n}" string="true">', "</｜DSML｜ parameter>")
            + "\n</｜DSML｜ invoke>\n</｜DSML｜ calls>",
            B,
        ),
    ],
    "step3": [
        (
            '<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="final_answer">'
            + xml(A, '<steptml:parameter name="{n}">', "</steptml:parameter>", "")
            + "</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
            A,
        )
    ],
    "dots": [
        (
            '<dots_function_call>\n<invoke name="final_answer">\n'
            + xml(A, '<parameter name="{n}">', "</parameter>")
            + "\n</invoke>\n</dots_function_call>",
            A,
        )
    ],
    "minicpm5": [
        ('<function name="final_answer">' + xml(A, '<param name="{n}">', "</param>", "") + "</function>", A),
        (
            '<function name="final_answer">'
            + xml(B, '<param name="{n}"><![CDATA[', "]]></param>", "\n")
            + "</function>",
            B,
        ),
    ],
    "muse": [
        (
            '<|start|>assistant to=functions.final_answer<|message|><atem:function_calls><atem:invoke name="final_answer">'
            + xml(A, '<atem:parameter name="{n}">', "</atem:parameter>", "")
            + "</atem:invoke></atem:function_calls><|eot|>",
            A,
        )
    ],
    "anthropic_xml": [
        (
            '<function_calls>\n<invoke name="final_answer">\n'
            + xml(A, '<parameter name="{n}">', "</parameter>")
            + "\n</invoke>\n</function_calls>",
            A,
        ),
        (
            f'<{NS}function_calls>\n<{NS}invoke name="final_answer">\n'
            + xml(B, f'<{NS}parameter name="{{n}}">', f"</{NS}parameter>")
            + f"\n</{NS}invoke>\n</{NS}function_calls>",
            B,
        ),
        (
            "<function_calls>\n<invoke>\n<tool_name>final_answer</tool_name>\n<parameters>\n"
            + xml(A, "<{n}>", "</{n}>")
            + "\n</parameters>\n</invoke>\n</function_calls>",
            A,
        ),
    ],
    "kimi_k3": [
        (
            '<|open|>tools<|sep|><|open|>call tool="final_answer" index="1"<|sep|>'
            + xml(A, '<|open|>argument key="{n}" type="string"<|sep|>', "<|close|>argument<|sep|>", "")
            + "<|close|>call<|sep|><|close|>tools<|sep|><|end_of_msg|>",
            A,
        )
    ],
    "k2_horizon": [
        (
            "<ifm|tool_calls><ifm|tool_call>final_answer"
            + xml(
                A,
                "<ifm|arg_key>{n}</ifm|arg_key><ifm|arg_type>string</ifm|arg_type><ifm|arg_value>",
                "</ifm|arg_value>",
                "",
            )
            + "</ifm|tool_call></ifm|tool_calls>",
            A,
        )
    ],
    "functiongemma": [(f"<start_function_call>call:final_answer{{{gemma(A, '<escape>')}}}<end_function_call>", A)],
    "gemma4": [("<|tool_call>call:final_answer{" + gemma(B, GEMMA4_QUOTE) + "}<tool_call|>", B)],
    "dspy_chat": [
        ("[[ ## reasoning ## ]]\nThe spike lines up with the deploy.\n\n" + DSPY + "\n\n[[ ## completed ## ]]", A),
        (DSPY, A),
    ],
    "dspy_xml": [(xml(A, "<{n}>\n", "\n</{n}>"), A)],
    "dspy_json": [
        (args(A), A),
        (json.dumps(A, separators=(",", ":")), A),
        (f"Here is the structured brief:\n```json\n{args(B)}\n```", B),
        ("Here is the result:\n```json\n{" + ", ".join(f'{n}: "{v}"' for n, v in A.items()) + ",}\n```", A),
    ],
    "instructor_tools": [
        (f'{{"name": "LoopOutput", "arguments": {json.dumps(args(A))}}}', A),
        (f'{{"type": "tool_use", "id": "toolu_01", "name": "LoopOutput", "input": {args(B)}}}', B),
    ],
    "react_final_answer": [
        (f"Thought: I now know the final answer.\nFinal Answer: {args(A)}", A),
        (f'Thought: I have what I need.\n```json\n{{"action": "final_answer", "action_input": {args(B)}}}\n```', B),
        (f'Action:\n{{\n  "name": "final_answer",\n  "arguments": {args(A)}\n}}', A),
    ],
    "labels": [
        ("\n".join(f"{n.upper()}: {v}" for n, v in A.items()), A),
        ("\n".join(f"## {n.title()}\n{v}\n" for n, v in B.items()), B),
    ],
    "xml_tags": [(xml(A, "<{n}>", "</{n}>"), A)],
    "apple_plist": [
        (
            '<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0">\n<dict>\n'
            + "".join(f"\t<key>{n}</key>\n\t<string>{v}</string>\n" for n, v in A.items())
            + "\t<key>tokens</key>\n\t<integer>212</integer>\n</dict>\n</plist>",
            A,
        ),
        ("<dict>" + "".join(f"<key>{n}</key><string>{v}</string>" for n, v in B.items()) + "</dict>", B),
    ],
    "bracket_tags": [
        (xml(A, "[{n}]\n", "\n[/{n}]"), A),
        ("[CONTENT]\n" + xml(B, "[{n}]", "[/{n}]") + "\n[/CONTENT]", B),
        ("\n".join(f"[{n.upper()}] {v}" for n, v in A.items()), A),
    ],
    "yaml": [("\n".join(f"{n}: {v}" for n, v in A.items()), A)],
    "table": [("| Section | Content |\n|---|---|\n" + "\n".join(f"| {n.title()} | {v} |" for n, v in B.items()), B)],
    "printed": [(f"LoopOutput({kwargs(A, quote=chr(39))})", A)],
    "html": [("".join(f"<h2>{n.title()}</h2><p>{v}</p>" for n, v in A.items()), A)],
    "php_print_r": [("Array\n(\n" + "".join(f"    [{n}] => {v}\n" for n, v in A.items()) + ")\n", A)],
    "php_var_dump": [
        ("array(5) {\n" + "".join(f'  ["{n}"]=>\n  string({len(v)}) "{v}"\n' for n, v in B.items()) + "}", B)
    ],
    "perl_dumper": [("$VAR1 = {\n" + ",\n".join(f"  '{n}' => '{v}'" for n, v in A.items()) + "\n};", A)],
    "r_list": [("\n\n".join(f'${n}\n[1] "{v}"' for n, v in A.items()) + "\n", A)],
    "edn": [("{" + "\n ".join(f':{n} "{v}"' for n, v in B.items()) + "}", B)],
    "erlang_map": [("#{" + ",\n  ".join(f'<<"{n}">> => <<"{v}">>' for n, v in A.items()) + "}", A)],
    "redis_reply": [("\n".join(f'{2 * i + 1}) "{n}"\n{2 * i + 2}) "{v}"' for i, (n, v) in enumerate(B.items())), B)],
    "to_string": [
        ("LoopOutput(" + ", ".join(f"{n}={v}" for n, v in A.items()) + ")", A),
        ("LoopOutput[" + ", ".join(f"{n}={v}" for n, v in B.items()) + "]", B),
    ],
    "latex_items": [
        (
            "\\begin{description}\n"
            + "\n".join(f"  \\item[{n.title()}] {v}" for n, v in A.items())
            + "\n\\end{description}",
            A,
        )
    ],
}
