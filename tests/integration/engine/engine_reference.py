"""Reference side of the engine tests: tiny random Qwen2 / Qwen3 / Llama checkpoints (with a tiny byte-level
BPE tokenizer.json), transformers' greedy generate() on a few prompts, and the teacher-forced log-softmax of
the generated tokens.

  make --out DIR   one sub-directory per case: config.json, model.safetensors, tokenizer.json, ref.json

ref.json: {"eos": id, "prompts": [[ids]], "greedy": [[generated ids]], "teacher_logprobs": [[float]]}.
Exit status: 0 ok, 2 usage.
"""
import argparse
import json
import os
import sys

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

VOCAB = 320
TINY = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6)
CASES = {
    "qwen2": (transformers.Qwen2Config, dict(tie_word_embeddings=True, rope_theta=1e6)),
    "qwen3": (transformers.Qwen3Config, dict(head_dim=32, tie_word_embeddings=False)),
    "llama": (transformers.LlamaConfig, dict(tie_word_embeddings=False, rope_theta=5e5)),
}
PROMPT_LENGTHS = [3, 11, 29, 40]
NEW_TOKENS = 24
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

CORPUS = [
    "def forward(self, x):\n    return torch.relu(x) + 1\n",
    "__global__ void add(const float* a, const float* b, float* c, int n) { int i = blockIdx.x; }\n",
    "The kernel fuses softmax and matmul; speedup 1.5x over eager.\n",
    "for (int i = 0; i < n; ++i) { out[i] = a[i] * b[i]; }\n",
    "héllo wörld — ünïcödé 你好 🙂\n",
]


def build_tokenizer(path):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 20, trainer=trainer)
    assert tok.get_vocab_size() == VOCAB, tok.get_vocab_size()  # every model id has a text
    tok.save(path)
    return tok


def build_model(cls, extra, seed, eos):
    torch.manual_seed(seed)
    cfg = cls(**{**TINY, **extra}, eos_token_id=eos, bos_token_id=eos, pad_token_id=eos)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32, attn_implementation="sdpa")
    with torch.no_grad():  # widen the tiny default init so logits are far apart
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return model.eval()


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--out", required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    for k, (name, (cls, extra)) in enumerate(CASES.items()):
        out = os.path.join(args.out, name)
        os.makedirs(out, exist_ok=True)
        tok = build_tokenizer(os.path.join(out, "tokenizer.json"))
        eos = tok.token_to_id("<|endoftext|>")
        model = build_model(cls, extra, 2000 + k, eos)
        model.save_pretrained(out, safe_serialization=True)
        g = torch.Generator().manual_seed(11 + k)
        ref = {"eos": eos, "prompts": [], "greedy": [], "teacher_logprobs": []}
        for t in PROMPT_LENGTHS:
            ids = torch.randint(len(SPECIAL), tok.get_vocab_size(), (1, t), generator=g)
            with torch.no_grad():
                gen = model.generate(ids, max_new_tokens=NEW_TOKENS, do_sample=False, eos_token_id=eos,
                                     pad_token_id=eos)
                new = gen[0, t:]
                logp = model(input_ids=gen).logits.float().log_softmax(-1)[0, t - 1:-1]
            ref["prompts"].append(ids[0].tolist())
            ref["greedy"].append(new.tolist())
            ref["teacher_logprobs"].append(logp.gather(-1, new.unsqueeze(-1)).squeeze(-1).tolist())
        with open(os.path.join(out, "ref.json"), "w") as f:
            json.dump(ref, f)
    print(json.dumps({"cases": list(CASES), "transformers": transformers.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
