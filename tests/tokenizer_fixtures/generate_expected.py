"""Expected ids for the published tokenizers of Gemma, Mistral, Phi-3 mini, Phi-4, Qwen 3 and Llama 4.

  python generate_expected.py --out DIR --fixtures FT_FIXTURES

scripts/tokenizer_fixtures.py runs it once it has put each family's published files in
DIR/<family>/ and installed the pinned reference implementations on PYTHONPATH. For each family it
writes:
  expected_ids.jsonl  {"text", "ids", "decoded"} a line: the reference's ids for the text without
                      special tokens, and the reference's decoding of them
  chat.jsonl          {"name", "turns", "add_end_tokens", "max_seq_len", "prompt_template",
                      "tokens", "mask"} a line, or "error" where torchtune refuses the conversation
  meta.json           torchtune's BOS/EOS/pad ids, vocabulary size, stop tokens and encode with
                      BOS and EOS, the number of texts and conversations, and what the reference was
The references: SentencePiece itself (Google's `sentencepiece`, which torchtune calls) for the
tokenizer.model files, Hugging Face `tokenizers` for the byte-level BPE files, cross-checked against
torchtune's and tiktoken's ids; chat formats from torchtune 0.6.1's own tokenize_messages. Llama 4
(not in torchtune 0.6.1): Meta's own Tokenizer and ChatFormat from llama-models, in torchtune's
framing (BOS, masks, EOS, truncation); its chat.jsonl turns also carry "eot", the end token Meta
gives each message.
"""

import argparse
import base64
import json
import os
import sys

import corpus
import meta_llama4
import torchtune_tokenizers

# torchtune main's QWEN3_SPECIAL_TOKENS (torchtune/models/qwen3/_tokenizer.py): Qwen 2.5's and four
# more. torchtune main's Qwen3Tokenizer is its Qwen2_5Tokenizer with these tokens, and main's
# Qwen2_5Tokenizer.tokenize_messages is 0.6.1's with a truncation_type (which Qwen3Tokenizer does
# not pass on), so 0.6.1's Qwen2_5Tokenizer with them renders Qwen 3's chats as main does.
QWEN3_EXTRA_SPECIAL_TOKENS = {"<tool_response>": 151665, "</tool_response>": 151666, "<think>": 151667, "</think>": 151668}

# Special tokens in running text: split out by Qwen's and Hugging Face's tokenizers.
FAMILY_TEXTS = {
    "qwen3": ["<think>\nLet me see.\n</think>\n\nIt is 4.", "<|im_start|>user\nhi<|im_end|>", "a<tool_call>b</tool_call>"],
    "phi4": ["<|im_start|>user<|im_sep|>hi<|im_end|>", "end<|endoftext|>", "<|dummy_85|>"],
}


# Where Llama 4's pre-tokenizer parts from Llama 3's (cl100k): words split where lower case turns
# to upper, contractions kept on their word in any case, "/" kept on the punctuation before it, and
# letters with marks, titlecase and modifier letters; digits, CJK, emoji and whitespace runs; and
# special-token text, which Meta's tokenizer (like torchtune's) encodes as ordinary text.
LLAMA4_TEXTS = [
    "HelloWorld",
    "getHTTPResponseCode parseXMLString iPhone McDonald's",
    "camelCase PascalCase snake_case SCREAMING_CASE kebab-case",
    "I'M HERE. YOU'RE RIGHT, WE'LL SEE; THEY'VE GONE AND HE'D KNOW IT'S",
    "I'm sure they'LL come, it'S fine, O'NEIL's DON'T",
    "path/to/file.txt and /usr/local/bin/ and a//b and https://example.com/a/b/",
    "end.\n/start ?/ !!//",
    "1 22 333 4444 55555 666666 7777777 x1y22z333 3.14159265358979",
    "\u0663\u0664\u0665 \u0661\u0662\u0663\u0664 \u2160\u2161\u2162 \u00bd \u00b2\u00b3",
    "\u6f22\u5b57\u304b\u306a\u30ab\u30ca\ud55c\uae00 ABC\u6f22\u5b57def \u6771\u4eac2024\u5e74",
    "e\u0301cole cafe\u0301 \u0301alone na\u0308ive",
    "\u01c5emal \u01c8ubljana \u02b0\u02b2 \u1d2c\u1d2e",
    "\U0001F44D\U0001F3FD\U0001F468\u200d\U0001F469\u200d\U0001F467 \U0001F1EB\U0001F1F7 \u2764\ufe0f x\U0001F600y",
    "a\u3000\u3000b \u00a0c\u2009d\u202fe",
    "  \n\n  \t\t x \r\n\r\n\ty   ",
    "<|begin_of_text|>",
    "<|header_start|>user<|header_end|>\n\nhi<|eot|>",
    "<|eom|><|python_start|>print(1)<|python_end|><|step|>",
    "<|image_start|><|image|><|patch|><|tile_x_separator|><|image_end|>",
    "<|finetune_right_pad|> <|reserved_special_token_0|> <|text_post_train_reserved_special_token_6|>",
    "<|reasoning_thinking_start|>hmm<|reasoning_thinking_end|><|end_of_text|>",
]


def llama4_long_texts():
    """Texts whose ids change where Meta's encode cuts them: at a run of more than 25,000 whitespace
    or non-whitespace characters, and at 400,000 characters. Each cut falls inside a regex piece."""
    return [
        "aB" * 12501,  # pieces "a", "Ba", ...: the cut at 25,000 splits a "Ba"
        "1234" * 6251,  # digits in threes from the start: the cut at 25,000 splits a group
        "x" + " " * 25003 + "y",  # a run of spaces, cut after 25,000 of them
        "x" + "\u00a0" * 25003 + "y",  # no-break spaces: whitespace to Meta's cut, counted in characters
        "x" + "\u3000" * 24999 + "   y",  # ideographic spaces then ASCII ones: one run of 25,002
        "ab " * 133334,  # words of three characters: the cut at 400,000 splits " ab"
    ]


# Conversations only Llama 4's chat format treats apart: an OpenAI-style "tool" message (header
# "ipython" in Meta's format) and whitespace around a system prompt (not stripped).
LLAMA4_CONVERSATIONS = [
    corpus.Conversation(
        "tool_role",
        [
            corpus.Turn("system", "  You can call tools.\n", masked=True),
            corpus.Turn("user", "What is 6 times 7?", masked=True),
            corpus.Turn("assistant", '{"name": "multiply", "parameters": {"a": 6, "b": 7}}', ipython=True),
            corpus.Turn("tool", '{"result": 42}', masked=True),
            corpus.Turn("assistant", "6 times 7 is 42.\n"),
        ],
    ),
]


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def bytes_to_unicode():
    """GPT-2's byte -> printable character map, in which vocab.json and merges.txt spell tokens."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def tiktoken_to_vocab_merges(ranks, special_tokens, out_dir):
    """Writes a tiktoken ranks table as vocab.json + merges.txt, the pair Phi-4 publishes.

    Each token's merge is the split that BPE over the lower-ranked tokens reaches, so merging by
    rank reproduces tiktoken's encoding (checked text by text below)."""
    spell_byte = bytes_to_unicode()

    def spell(token):
        return "".join(spell_byte[b] for b in token)

    def split_below(token, rank):
        parts = [bytes([b]) for b in token]
        while True:
            best = None
            for i in range(len(parts) - 1):
                r = ranks.get(parts[i] + parts[i + 1])
                if r is not None and r < rank and (best is None or r < best[1]):
                    best = (i, r)
            if best is None:
                return parts
            i = best[0]
            parts[i : i + 2] = [parts[i] + parts[i + 1]]

    merges = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) > 1:
            parts = split_below(token, rank)
            if len(parts) != 2:
                raise SystemExit(f"tokenizer fixtures: cl100k token {token!r} has no single merge")
            merges.append((spell(parts[0]), spell(parts[1])))
    vocab = {spell(t): r for t, r in ranks.items()}
    vocab.update(special_tokens)
    with open(os.path.join(out_dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out_dir, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    return vocab, merges


def tokenizer_json_to_vocab_merges(tokenizer_json, out_dir):
    """The vocab.json + merges.txt pair torchtune's Qwen tokenizers read, from a tokenizer.json."""
    with open(tokenizer_json, encoding="utf-8") as f:
        model = json.load(f)["model"]
    with open(os.path.join(out_dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(model["vocab"], f, ensure_ascii=False)
    with open(os.path.join(out_dir, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for m in model["merges"]:
            f.write((m if isinstance(m, str) else " ".join(m)) + "\n")


def encode_with_bos_eos(torchtune_tok):
    """torchtune's encode with BOS and EOS, whose EOS is not always the tokenizer's eos_id."""
    text = "Hello world"
    return {"text": text, "ids": list(torchtune_tok.encode(text, add_bos=True, add_eos=True))}


def chat_rows(tt, make_tokenizer, conversations, templates):
    """torchtune's tokenize_messages for every conversation, prompt template and option.

    `templates`: (the tokenizer's prompt_template key, None when left out; torchtune's template)."""
    rows = []
    tokenizers = {}
    for template_name, template in templates:
        for c in conversations:
            key = (template_name, c.max_seq_len)
            if key not in tokenizers:
                tokenizers[key] = make_tokenizer(c.max_seq_len, template)
            messages = [
                tt.data.Message(role=t.role, content=t.content, masked=t.masked, ipython=t.ipython) for t in c.turns
            ]
            if template_name is None:
                label = ""
            else:
                label = "_" + (template_name.rsplit(".", 1)[-1] if template_name else "no_template")
            row = {
                "name": c.name + label,
                "turns": [t.to_json() for t in c.turns],
                "add_end_tokens": c.add_end_tokens,
                "max_seq_len": c.max_seq_len,
                "prompt_template": template_name,
            }
            try:
                tokens, mask = tokenizers[key].tokenize_messages(messages, add_eos=c.add_end_tokens)
                row["tokens"], row["mask"] = list(tokens), [bool(m) for m in mask]
            except (ValueError, RuntimeError, KeyError) as e:
                row["error"] = f"{type(e).__name__}: {e}"
            rows.append(row)
    return rows


def sentencepiece_family(tt, family, out_dir, texts, conversations, make_tokenizer, templates):
    import sentencepiece

    model = os.path.join(out_dir, "tokenizer.model")
    sp = sentencepiece.SentencePieceProcessor()
    sp.load(model)
    torchtune_tok = make_tokenizer(None, None)
    rows = []
    for text in texts:
        ids = sp.encode(text, out_type=int)
        if torchtune_tok.encode(text, add_bos=False, add_eos=False) != ids:
            raise SystemExit(f"tokenizer fixtures: {family}: torchtune's encode differs from SentencePiece's")
        rows.append({"text": text, "ids": ids, "decoded": sp.decode(ids)})
    write_jsonl(os.path.join(out_dir, "expected_ids.jsonl"), rows)
    chats = chat_rows(tt, make_tokenizer, conversations, templates)
    write_jsonl(os.path.join(out_dir, "chat.jsonl"), chats)
    meta = {
        "bos_id": torchtune_tok.bos_id,
        "eos_id": torchtune_tok.eos_id,
        "pad_id": torchtune_tok.pad_id,
        "vocab_size": torchtune_tok.vocab_size,
        "stop_tokens": list(torchtune_tok.stop_tokens),
        "encode_with_bos_eos": encode_with_bos_eos(torchtune_tok),
        "texts": len(rows),
        "conversations": len(chats),
        "reference": f"sentencepiece {sentencepiece.__version__} on tokenizer.model; chats: torchtune's tokenize_messages",
    }
    return meta


def phi4_family(tt, out_dir, texts, conversations):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    phi4 = tt.models.phi4._tokenizer
    special = dict(phi4.PHI4_SPECIAL_TOKENS)
    ranks = load_tiktoken_bpe(os.path.join(out_dir, "cl100k_base.tiktoken"))
    vocab, merges = tiktoken_to_vocab_merges(ranks, special, out_dir)

    # Hugging Face's tokenizer for the pair: BPE over the cl100k pre-tokenizer (torchtune's own
    # CL100K_PATTERN), byte-level, with Phi-4's added tokens split out of the text.
    hf = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(phi4.CL100K_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in sorted(special, key=special.get)])
    openai = tiktoken.Encoding("cl100k_base", pat_str=phi4.CL100K_PATTERN, mergeable_ranks=ranks, special_tokens=special)

    torchtune_tok = phi4.Phi4Tokenizer(
        merges_path=os.path.join(out_dir, "merges.txt"), vocab_path=os.path.join(out_dir, "vocab.json")
    )
    rows, torchtune_differs = [], []
    for text in texts + FAMILY_TEXTS["phi4"]:
        ids = hf.encode(text, add_special_tokens=False).ids
        if openai.encode(text, allowed_special="all") != ids:
            raise SystemExit(f"tokenizer fixtures: phi4: tiktoken and Hugging Face disagree on {text!r}")
        if torchtune_tok.encode(text, add_bos=False, add_eos=False) != ids:
            torchtune_differs.append(text)
        # torchtune's Phi4Tokenizer.decode leaves the special tokens out.
        rows.append({"text": text, "ids": ids, "decoded": hf.decode(ids, skip_special_tokens=True)})
    write_jsonl(os.path.join(out_dir, "expected_ids.jsonl"), rows)

    def make_tokenizer(max_seq_len, template):
        tok = phi4.Phi4Tokenizer(
            merges_path=os.path.join(out_dir, "merges.txt"),
            vocab_path=os.path.join(out_dir, "vocab.json"),
            max_seq_len=max_seq_len,
            prompt_template=template,
        )
        # torchtune's chat format around the published tokenizer's text encoding (see meta notes).
        tok.tokenizer_model.encode = lambda text, add_bos=True, add_eos=True: (
            ([tok.bos_id] if add_bos else []) + hf.encode(text, add_special_tokens=False).ids + ([tok.eos_id] if add_eos else [])
        )
        return tok

    chats = chat_rows(tt, make_tokenizer, conversations, [(None, None)])
    write_jsonl(os.path.join(out_dir, "chat.jsonl"), chats)
    return {
        "bos_id": torchtune_tok.bos_id,
        "eos_id": torchtune_tok.eos_id,
        "pad_id": torchtune_tok.pad_id,
        "vocab_size": torchtune_tok.vocab_size,
        "stop_tokens": list(torchtune_tok.stop_tokens),
        "encode_with_bos_eos": encode_with_bos_eos(torchtune_tok),
        "texts": len(rows),
        "conversations": len(chats),
        "reference": "Hugging Face tokenizers on vocab.json + merges.txt written from cl100k_base.tiktoken, "
        f"equal to tiktoken {tiktoken.__version__} on every text; chats: torchtune's tokenize_messages "
        "with that text encoding",
        "torchtune_gpt2_base_tokenizer_differs_on": torchtune_differs,
    }


def qwen3_family(tt, fixtures, out_dir, texts, conversations):
    from tokenizers import Tokenizer

    tokenizer_json = os.path.join(fixtures, "tokenizers", "qwen3", "tokenizer.json")
    tokenizer_json_to_vocab_merges(tokenizer_json, out_dir)
    hf = Tokenizer.from_file(tokenizer_json)
    qwen2_5 = tt.models.qwen2_5._tokenizer
    special = {**qwen2_5.QWEN2_5_SPECIAL_TOKENS, **QWEN3_EXTRA_SPECIAL_TOKENS}

    def make_tokenizer(max_seq_len, template):
        return qwen2_5.Qwen2_5Tokenizer(
            path=os.path.join(out_dir, "vocab.json"),
            merges_file=os.path.join(out_dir, "merges.txt"),
            special_tokens=special,
            max_seq_len=max_seq_len,
            prompt_template=template,
        )

    torchtune_tok = make_tokenizer(None, None)
    rows = []
    for text in texts + FAMILY_TEXTS["qwen3"]:
        ids = hf.encode(text, add_special_tokens=False).ids
        if torchtune_tok.encode(text, add_bos=False, add_eos=False) != ids:
            raise SystemExit(f"tokenizer fixtures: qwen3: torchtune and Hugging Face disagree on {text!r}")
        rows.append({"text": text, "ids": ids, "decoded": hf.decode(ids, skip_special_tokens=False)})
    write_jsonl(os.path.join(out_dir, "expected_ids.jsonl"), rows)
    chats = chat_rows(tt, make_tokenizer, conversations, [(None, None)])
    write_jsonl(os.path.join(out_dir, "chat.jsonl"), chats)
    return {
        "bos_id": torchtune_tok.bos_id,
        "eos_id": torchtune_tok.eos_id,
        "pad_id": torchtune_tok.pad_id,
        # torchtune's Qwen tokenizers have no vocab_size: one past the highest id.
        "vocab_size": max(max(torchtune_tok.encoder.values()), max(special.values())) + 1,
        "stop_tokens": list(torchtune_tok.stop_tokens),
        "encode_with_bos_eos": encode_with_bos_eos(torchtune_tok),
        "texts": len(rows),
        "conversations": len(chats),
        "reference": "Hugging Face tokenizers on Qwen 3's tokenizer.json, equal to torchtune's Qwen2Tokenizer on "
        "every text; chats: torchtune's Qwen2_5Tokenizer.tokenize_messages with Qwen 3's special tokens",
    }


def llama4_family(tt, out_dir, texts, conversations):
    import tiktoken

    tok, chat_format, datatypes = meta_llama4.load(os.path.join(out_dir, "tokenizer.model"))

    # Cross-check: tiktoken with Meta's pattern and special tokens on the whole text. It must agree
    # with Meta's encode except on the texts Meta cuts first (llama4_long_texts).
    ranks = {}
    with open(os.path.join(out_dir, "tokenizer.model"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    whole = tiktoken.Encoding(
        "llama4", pat_str=tok.O200K_PATTERN, mergeable_ranks=ranks, special_tokens=tok.special_tokens
    )
    long_texts = llama4_long_texts()
    rows = []
    for text in texts + LLAMA4_TEXTS + long_texts:
        ids = tok.encode(text, bos=False, eos=False)
        cut_changes_ids = whole.encode(text, disallowed_special=()) != ids
        if cut_changes_ids != (text in long_texts):
            raise SystemExit(f"tokenizer fixtures: llama4: tiktoken and Meta's encode disagree on {text[:60]!r}")
        rows.append({"text": text, "ids": ids, "decoded": tok.decode(ids)})
    write_jsonl(os.path.join(out_dir, "expected_ids.jsonl"), rows)

    raw_message = datatypes.RawMessage
    stop = datatypes.StopReason

    def meta_message(turn):
        # Meta's roles: a tool result is "tool" (its header says "ipython"); an assistant message
        # that calls a tool ends the message, not the turn.
        role = "tool" if turn.role in ("ipython", "tool") else turn.role
        reason = stop.end_of_message if role == "assistant" and turn.ipython else stop.end_of_turn
        return raw_message(role=role, content=turn.content, stop_reason=reason)

    truncate = tt.data.truncate
    chats = []
    for c in conversations + LLAMA4_CONVERSATIONS:
        encoded = [chat_format.encode_message(meta_message(t), datatypes.ToolPromptFormat.json)[0] for t in c.turns]
        ends = [e[-1] for e in encoded]
        if any(end not in (tok.eot_id, tok.eom_id) for end in ends):
            raise SystemExit(f"tokenizer fixtures: llama4: {c.name}: a message does not end in <|eot|> or <|eom|>")
        # torchtune's framing: BOS, each message with its mask, the last one open without end
        # tokens, a stop once max_seq_len is reached, then EOS, and truncation keeping EOS last.
        tokens, mask = [tok.bos_id], [True]
        for i, (t, e) in enumerate(zip(c.turns, encoded)):
            if i == len(c.turns) - 1 and not c.add_end_tokens:
                e = e[:-1]
            tokens += e
            mask += [t.masked] * len(e)
            if c.max_seq_len and len(tokens) >= c.max_seq_len:
                break
        if c.add_end_tokens:
            tokens.append(tok.eos_id)
            mask.append(True)
        if c.max_seq_len:
            tokens = truncate(tokens, c.max_seq_len, tok.eos_id if c.add_end_tokens else None)
            mask = truncate(mask, c.max_seq_len, True if c.add_end_tokens else None)
        row = {
            "name": c.name,
            "turns": [{**t.to_json(), "eot": end == tok.eot_id} for t, end in zip(c.turns, ends)],
            "add_end_tokens": c.add_end_tokens,
            "max_seq_len": c.max_seq_len,
            "prompt_template": None,
            "tokens": tokens,
            "mask": mask,
        }
        if not c.max_seq_len:
            row["decoded"] = tok.decode(tokens)
        chats.append(row)
    write_jsonl(os.path.join(out_dir, "chat.jsonl"), chats)
    return {
        "bos_id": tok.bos_id,
        "eos_id": tok.eos_id,
        "pad_id": tok.pad_id,
        "vocab_size": tok.n_words,
        "stop_tokens": list(tok.stop_tokens),
        "encode_with_bos_eos": {"text": "Hello world", "ids": tok.encode("Hello world", bos=True, eos=True)},
        "special_tokens": tok.special_tokens,
        "eot_id": tok.eot_id,
        "eom_id": tok.eom_id,
        "texts": len(rows),
        "long_texts": len(long_texts),
        "conversations": len(chats),
        "reference": "Meta's llama_models.llama4 Tokenizer (tiktoken "
        f"{tiktoken.__version__}, its O200K_PATTERN and special tokens) for the texts, equal to tiktoken on the "
        "whole text except where Meta's encode cuts long runs; chats: Meta's ChatFormat.encode_message per "
        "message in torchtune's framing",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--fixtures", required=True)
    args = parser.parse_args()

    tt = torchtune_tokenizers.load()
    texts = corpus.texts(args.fixtures)
    conversations = corpus.conversations(args.fixtures)
    mistral_chat = tt.models.mistral._prompt_template.MistralChatTemplate()
    d = lambda family: os.path.join(args.out, family)  # noqa: E731
    metas = {}

    gemma = tt.models.gemma._tokenizer.GemmaTokenizer
    metas["gemma"] = sentencepiece_family(
        tt,
        "gemma",
        d("gemma"),
        texts,
        conversations,
        lambda n, t: gemma(path=os.path.join(d("gemma"), "tokenizer.model"), max_seq_len=n, prompt_template=t),
        [(None, None), ("torchtune.models.mistral.MistralChatTemplate", mistral_chat)],
    )
    mistral = tt.models.mistral._tokenizer.MistralTokenizer
    metas["mistral"] = sentencepiece_family(
        tt,
        "mistral",
        d("mistral"),
        texts,
        conversations,
        lambda n, t: mistral(path=os.path.join(d("mistral"), "tokenizer.model"), max_seq_len=n, prompt_template=t),
        [(None, mistral_chat), ("", None)],
    )
    phi3 = tt.models.phi3._tokenizer.Phi3MiniTokenizer
    metas["phi3_mini"] = sentencepiece_family(
        tt,
        "phi3_mini",
        d("phi3_mini"),
        texts,
        conversations,
        lambda n, t: phi3(path=os.path.join(d("phi3_mini"), "tokenizer.model"), max_seq_len=n, prompt_template=t),
        [(None, None)],
    )
    metas["phi4"] = phi4_family(tt, d("phi4"), texts, conversations)
    metas["qwen3"] = qwen3_family(tt, args.fixtures, d("qwen3"), texts, conversations)
    metas["llama4"] = llama4_family(tt, d("llama4"), texts, conversations)
    for family, meta in metas.items():
        with open(os.path.join(d(family), "meta.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, ensure_ascii=False, indent=1)
        print(f"tokenizer fixtures: {family}: {meta['texts']} texts, {meta['conversations']} conversations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
