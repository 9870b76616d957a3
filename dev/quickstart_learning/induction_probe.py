"""Does the quickstart's from-scratch model learn to copy? Trains a model-init (transformers, CPU) on random-token
copies and prints the loss on the copied tokens every 50 steps; chance is ln(vocab size) (7.06 nats for the
1,165-token vocabulary of a 200-task corpus).

  fixed   [a (24 random tokens)] SEP [a]: the copy is always 25 positions back
  varied  [noise 0-40] [a (6-48 tokens)] [noise 0-40] SEP [a]: the copy must be found by content

  python3 dev/quickstart_learning/induction_probe.py MODEL_INIT fixed|varied STEPS [LR] [OUT_DIR]
"""
import random
import shutil
import sys
import time

import torch
import transformers


def batch(mode, vocab, size=16):
    if mode == "fixed":
        a = torch.randint(10, vocab, (size, 24))
        x = torch.cat([a, torch.full((size, 1), 5), a], 1)
        y = torch.full_like(x, -100)
        y[:, 26:] = a[:, 1:]
        return x, y
    x = torch.randint(10, vocab, (size, 180))
    y = torch.full_like(x, -100)
    for b in range(size):
        n, g1, g2 = random.randint(6, 48), random.randint(0, 40), random.randint(0, 40)
        a = torch.randint(10, vocab, (n,))
        x[b, g1:g1 + n] = a
        sep = g1 + n + g2
        x[b, sep] = 5
        x[b, sep + 1:sep + 1 + n] = a
        y[b, sep + 2:sep + 1 + n] = a[1:]
    return x, y


def main():
    if len(sys.argv) < 4 or sys.argv[2] not in ("fixed", "varied"):
        sys.exit(__doc__)
    base, mode, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    lr = float(sys.argv[4]) if len(sys.argv) > 4 else 3e-3
    torch.manual_seed(0)
    random.seed(0)
    model = transformers.AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    vocab = model.config.vocab_size
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    start = time.time()
    for step in range(1, steps + 1):
        x, y = batch(mode, vocab)
        logits = model(x).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), y[:, 1:].reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"step {step} copy loss {loss.item():.3f} ({time.time() - start:.0f} s)", flush=True)
    if len(sys.argv) > 5:
        model.save_pretrained(sys.argv[5])
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(f"{base}/{f}", f"{sys.argv[5]}/{f}")


if __name__ == "__main__":
    main()
