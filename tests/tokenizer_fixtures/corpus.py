"""The texts and conversations the tokenizer fixtures are generated for.

Texts: the shared fixture texts ($FT_FIXTURES/tokenizers/texts.json), every field of the Alpaca
sample ($FT_FIXTURES/data/alpaca_tiny.json), and the edge cases below (scripts, whitespace runs,
digits, code, contractions in capitals), a few hundred in all. Conversations: Alpaca instructions
with and without a system prompt, the multi-turn chat sample, whitespace at the edges of turns,
tool use, each rendered with and without end tokens and cut at a few max_seq_len.
"""

import json
import os
from dataclasses import dataclass
from typing import List, Optional

# Cases the shared texts and Alpaca lack: what pre-tokenizers, byte fallback and SentencePiece's
# whitespace handling get wrong first.
EDGE_TEXTS = [
    " leading space",
    "  two leading spaces",
    "trailing space ",
    "trailing spaces   ",
    "\nleading newline",
    "trailing newline\n",
    "abc \n ",
    "x\n\n\ny",
    "\n\n\n",
    "\t tab then space",
    "tab\there\tand\tthere",
    "carriage\r\nreturns\r\n",
    "many     inner      spaces",
    "I'LL SAY IT: YOU'RE WRONG, we'd've known, they'Re",
    "don't won't can't shan't",
    "numbers 1 12 123 1234 12345 123456 1234567890",
    "3.14159 -42 1e-5 0x1F 1,000,000 2024-12-05T06:52:07Z",
    "snake_case_name and __dunder__ and CamelCaseName",
    "def f(x):\n    return x ** 2  # square\n",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    '{"key": [1, 2, {"nested": null}], "flag": true}',
    "https://example.com/path?query=1&other=two#frag",
    "email@example.org, +1 (555) 010-0000",
    "Ünïcödé àccénts: café, naïve, façade, Øre, ß",
    "Ελληνικά κείμενο και ρωσικий текст",
    "日本語のテキストと漢字、カタカナ。",
    "中文文本，包含标点符号！",
    "한국어 문장입니다.",
    "العربية نص من اليمين إلى اليسار",
    "हिन्दी में एक वाक्य",
    "emoji 😀👍🏽 family 👨‍👩‍👧 flag 🇫🇷",
    "math ∑ x² ≤ ∞, √2 ≈ 1.414, α β γ",
    "symbols !!! ??? ... --- *** ### @@@",
    "zero\u200bwidth and non\u00a0breaking",
    "a",
    " ",
    "  ",
    "\n",
    "...",
    "A" * 64,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
]


@dataclass
class Turn:
    role: str
    content: str
    masked: bool = False
    ipython: bool = False

    def to_json(self):
        return {"role": self.role, "content": self.content, "masked": self.masked, "ipython": self.ipython}


@dataclass
class Conversation:
    name: str
    turns: List[Turn]
    add_end_tokens: bool = True
    max_seq_len: Optional[int] = None


def _load(fixtures: str, relative: str):
    path = os.path.join(fixtures, relative)
    if not os.path.isfile(path):
        raise SystemExit(f"tokenizer fixtures: {path} is missing (FT_FIXTURES is {fixtures})")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def texts(fixtures: str) -> List[str]:
    out = list(_load(fixtures, "tokenizers/texts.json"))
    for record in _load(fixtures, "data/alpaca_tiny.json"):
        out += [record["instruction"], record["input"], record["output"]]
    out += EDGE_TEXTS
    seen, unique = set(), []
    for t in out:
        if t not in seen:
            seen.add(t)
            unique.append(t)
    return unique


def conversations(fixtures: str) -> List[Conversation]:
    alpaca = _load(fixtures, "data/alpaca_tiny.json")
    out = []
    for i, r in enumerate(alpaca[:24]):
        prompt = r["instruction"] + ("\n\n" + r["input"] if r["input"] else "")
        out.append(Conversation(f"alpaca_{i}", [Turn("user", prompt, masked=True), Turn("assistant", r["output"])]))
    for i, r in enumerate(alpaca[24:30]):
        out.append(
            Conversation(
                f"alpaca_system_{i}",
                [
                    Turn("system", "You are a helpful assistant.", masked=True),
                    Turn("user", r["instruction"], masked=True),
                    Turn("assistant", r["output"]),
                ],
            )
        )
    role = {"system": "system", "human": "user", "gpt": "assistant"}
    chat = _load(fixtures, "data/chat_tiny.json")[0]["conversations"]
    chat_turns = [Turn(role[t["from"]], t["value"], masked=role[t["from"]] != "assistant") for t in chat]
    without_system = [t for t in chat_turns if t.role != "system"]
    out.append(Conversation("chat_multi_turn", chat_turns))
    out.append(Conversation("chat_multi_turn_no_system", without_system))
    out.append(
        Conversation("chat_train_on_input", [Turn(t.role, t.content, masked=False) for t in without_system])
    )
    out += [
        Conversation(
            "edge_spaces",
            [Turn("user", "Tell me a joke. ", masked=True), Turn("assistant", " Why did the chicken cross?  ")],
        ),
        Conversation(
            "edge_newlines",
            [Turn("user", "\nFirst line\nsecond line\n", masked=True), Turn("assistant", "\n\nAnswer:\n- one\n")],
        ),
        Conversation(
            "edge_unicode",
            [Turn("user", "Traduis : 日本語 😀 façade", masked=True), Turn("assistant", "Ελληνικά — ß ∑ x²")],
        ),
        Conversation("edge_digits_code", [Turn("user", "2**10 = ?", masked=True), Turn("assistant", "1024\n```py\nx = 2 ** 10\n```")]),
        Conversation("empty_assistant", [Turn("user", "Hello", masked=True), Turn("assistant", "")]),
        Conversation("user_only", [Turn("user", "Just a prompt.", masked=True)]),
        Conversation(
            "two_rounds",
            [
                Turn("user", "Name a colour.", masked=True),
                Turn("assistant", "Blue."),
                Turn("user", "Another one?", masked=True),
                Turn("assistant", "Green."),
            ],
        ),
        Conversation(
            "tool_use",
            [
                Turn("user", "What is 6 times 7?", masked=True),
                Turn("assistant", '{"name": "multiply", "arguments": {"a": 6, "b": 7}}', ipython=True),
                Turn("ipython", "42", masked=True),
                Turn("ipython", "checked", masked=True),
                Turn("assistant", "6 times 7 is 42."),
            ],
        ),
    ]
    # The same conversations for generation (no end tokens) and cut at max_seq_len.
    variants = []
    for c in out[:6] + out[-6:]:
        variants.append(Conversation(c.name + "_no_end_tokens", c.turns, add_end_tokens=False))
    for n in (8, 40):
        for c in out[:4] + out[-4:]:
            variants.append(Conversation(f"{c.name}_max_seq_len_{n}", c.turns, max_seq_len=n))
            variants.append(
                Conversation(
                    f"{c.name}_max_seq_len_{n}_no_end_tokens",
                    c.turns,
                    add_end_tokens=False,
                    max_seq_len=n,
                )
            )
    return out + variants
