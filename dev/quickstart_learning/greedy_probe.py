"""Greedy answers of checkpoints on unseen chat rows (rule-teacher answers, any copy_format.py format): the share
whose first line equals the reference's (the restated task line in formats A-C) and whose element-wise loop body
(code lines, comments dropped) equals the reference's.

  python3 dev/quickstart_learning/greedy_probe.py UNSEEN.jsonl CHECKPOINT [CHECKPOINT ...]
"""
import json
import re
import sys

import torch
import transformers


def loop_body(answer):
    m = re.search(r"float v = ld\(px, i\);\n(.*?)\n\s+st\(po, i, v\);", answer, re.S)
    if not m:
        return None
    return [l.strip() for l in m.group(1).split("\n") if l.strip() and not l.strip().startswith("//")]


def probe(checkpoint, rows):
    tok = transformers.AutoTokenizer.from_pretrained(checkpoint)
    model = transformers.AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32).eval()
    first = body = with_body = 0
    for r in rows:
        prompt = tok.apply_chat_template(r["messages"][:2], tokenize=False, add_generation_prompt=True)
        want = r["messages"][2]["content"]
        ids = tok(prompt, add_special_tokens=False, return_tensors="pt").input_ids
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=700, do_sample=False)
        got = tok.decode(out[0, ids.shape[1]:])
        first += got.split("\n")[0] == want.split("\n")[0]
        if loop_body(want) is not None:
            with_body += 1
            body += loop_body(got) == loop_body(want)
    return {"checkpoint": checkpoint, "first_line_exact": first / len(rows),
            "loop_body_exact": body / max(with_body, 1), "rows": len(rows), "rows_with_loop": with_body}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows = [json.loads(line) for line in open(sys.argv[1])]
    for checkpoint in sys.argv[2:]:
        print(json.dumps(probe(checkpoint, rows)), flush=True)


if __name__ == "__main__":
    main()
