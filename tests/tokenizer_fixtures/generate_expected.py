"""Expected ids for the published tokenizers of Gemma, Mistral, Phi-3 mini, Phi-4 and Qwen 3.

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
torchtune's and tiktoken's ids; chat formats from torchtune 0.6.1's own tokenize_messages.
"""

import argparse
import json
import os
import sys

import corpus
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
    for family, meta in metas.items():
        with open(os.path.join(d(family), "meta.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, ensure_ascii=False, indent=1)
        print(f"tokenizer fixtures: {family}: {meta['texts']} texts, {meta['conversations']} conversations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
