"""Rewrites rule-teacher answers of a quickstart sft.jsonl into formats that make the operator a copy from the
prompt (the experiment of docs/quickstart.md, "Copy-friendly answers"):

  A  the answer's first line restates the prompt's task line verbatim ("Task: <ops> on <dtype> input ..."), so the
     ops follow the same prefix as in the prompt (an induction copy), and the plan no longer names the ops
  B  A, and the kernel's "// <description>" comment becomes "// Task: <description>"
  C  B, and each chain line "v = <code>;  // <op>" becomes a comment line before its code: "// Task: <op>" for the
     first op, "// <previous op>+<op>" after it (each op then follows its predecessor as in the task line)

  python3 dev/quickstart_learning/copy_format.py A|B|C IN.jsonl OUT.jsonl
"""
import json
import re
import sys

CHAIN_LINE = re.compile(r"^(\s+)(v = .*;)  // (\S+)$")


def rewrite(answer, description, mode):
    answer = re.sub(r"^Plan: \S+ fused into one extension:", lambda m: "Task: " + description +
                    "\nPlan: one extension:", answer, count=1)
    if mode in "BC":
        answer = answer.replace("// " + description + "\n", "// Task: " + description + "\n", 1)
    if mode != "C":
        return answer
    lines, previous = [], None
    for line in answer.split("\n"):
        m = CHAIN_LINE.match(line)
        if not m:
            lines.append(line)
            continue
        indent, code, op = m.groups()
        lines.append(indent + ("// Task: " + op if previous is None else "// " + previous + "+" + op))
        lines.append(indent + code)
        previous = op
    return "\n".join(lines)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("A", "B", "C"):
        sys.exit(__doc__)
    mode, src, dst = sys.argv[1:]
    with open(src) as f, open(dst, "w") as out:
        for line in f:
            row = json.loads(line)
            description = re.search(r"\nTask: (.*)\n", row["messages"][1]["content"]).group(1)
            row["messages"][2]["content"] = rewrite(row["messages"][2]["content"], description, mode)
            out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
