"""Does a checkpoint read the operator from its prompt? Teacher-forced on a chat JSONL of rule-teacher answers
("Plan: <ops> fused into ..."), for each checkpoint: the mean NLL and top-1 accuracy of the first op token after
"Plan:" (chance over the ~16 ops: ~2.8 nats), and the mean NLL per answer token.

  python3 dev/quickstart_learning/op_probe.py PAIRS.jsonl CHECKPOINT [CHECKPOINT ...]
"""
import json
import sys

import torch
import transformers


def probe(checkpoint, rows, device):
    tok = transformers.AutoTokenizer.from_pretrained(checkpoint)
    model = transformers.AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32).to(device).eval()
    op_nll, answer_nll, answer_tokens, hits = 0.0, 0.0, 0, 0
    for r in rows:
        prompt = tok.apply_chat_template(r["messages"][:2], tokenize=False, add_generation_prompt=True)
        n_prompt = len(tok(prompt, add_special_tokens=False).input_ids)
        ids = tok(prompt + r["messages"][2]["content"] + "<|im_end|>", add_special_tokens=False).input_ids
        x = torch.tensor([ids], device=device)
        with torch.no_grad():
            logp = torch.log_softmax(model(x).logits[0, :-1].float(), -1)
        nll = -logp.gather(1, x[0, 1:, None])[:, 0]
        # answer = "Plan" ":" <op> ...: the op token is ids[n_prompt + 2], predicted at position n_prompt + 1
        op_nll += nll[n_prompt + 1].item()
        hits += int(logp[n_prompt + 1].argmax().item() == ids[n_prompt + 2])
        answer_nll += nll[n_prompt - 1:].sum().item()
        answer_tokens += len(ids) - n_prompt
    return {"checkpoint": checkpoint, "op_nll": round(op_nll / len(rows), 3), "op_top1": round(hits / len(rows), 3),
            "answer_nll_per_token": round(answer_nll / answer_tokens, 4)}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows = [json.loads(line) for line in open(sys.argv[1])]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for checkpoint in sys.argv[2:]:
        print(json.dumps(probe(checkpoint, rows, device)), flush=True)


if __name__ == "__main__":
    main()
