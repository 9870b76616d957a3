#!/usr/bin/env python3
"""Writes src/musa/rules/torchada_rules.json: torchada's CUDA->MUSA source rules, read from the
installed torchada package (never copied by hand), in the order torchada applies them.

torchada ports a load_inline CUDA source with `torchada.utils.cpp_extension._port_cuda_source`:
the rules of `torchada._mapping._MAPPING_RULE`, sorted longest key first (Python's stable sort:
equal lengths keep the dict's order), each applied to every line with `str.replace`, one after
the other. The JSON keeps exactly that order so the C++ porter (src/musa/port.cpp) replays it.

  gen_torchada_rules.py            rewrite the JSON from the installed torchada
  gen_torchada_rules.py --check    exit 1 (and say why) when the JSON differs from the installed torchada
"""
import argparse
import json
import os
import sys

PINNED = "0.1.103"  # scripts/setup.sh installs torchada==PINNED
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "src", "musa", "rules", "torchada_rules.json")


def mapping_rule():
    """torchada._mapping._MAPPING_RULE (= torchada._mappings.MAPPING_RULE), loaded from the installed
    package's files without running torchada/__init__.py, which imports torch (~15 s)."""
    import importlib.metadata
    import importlib.util
    spec = importlib.util.find_spec("torchada")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("no module named torchada")
    pkg_dir = os.path.join(list(spec.submodule_search_locations)[0], "_mappings")
    mspec = importlib.util.spec_from_file_location(
        "_torchada_mappings", os.path.join(pkg_dir, "__init__.py"), submodule_search_locations=[pkg_dir])
    module = importlib.util.module_from_spec(mspec)
    sys.modules[mspec.name] = module
    mspec.loader.exec_module(module)
    return importlib.metadata.version("torchada"), module.MAPPING_RULE


def current():
    version, rule = mapping_rule()
    rules = sorted(rule.items(), key=lambda kv: len(kv[0]), reverse=True)
    return {
        "source": "torchada._mapping._MAPPING_RULE, sorted as torchada.utils.cpp_extension._port_cuda_source sorts it",
        "torchada_version": version,
        "rules": [[k, v] for k, v in rules],
    }


def render(table):
    lines = ["{",
             '  "source": %s,' % json.dumps(table["source"]),
             '  "torchada_version": %s,' % json.dumps(table["torchada_version"]),
             '  "rules": [']
    body = ["    %s" % json.dumps(r, ensure_ascii=False) for r in table["rules"]]
    lines.append(",\n".join(body))
    lines += ["  ]", "}", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    try:
        table = current()
    except ImportError as e:
        print("torchada is not installed (pip install torchada==%s): %s" % (PINNED, e), file=sys.stderr)
        return 2
    if table["torchada_version"] != PINNED:
        print("installed torchada is %s, the rules are pinned to %s" % (table["torchada_version"], PINNED),
              file=sys.stderr)
        return 1
    text = render(table)
    if args.check:
        with open(args.out, encoding="utf-8") as f:
            old = f.read()
        if old != text:
            print("%s is stale: regenerate it with scripts/musa/gen_torchada_rules.py" % args.out, file=sys.stderr)
            return 1
        print("ok: %d rules from torchada %s" % (len(table["rules"]), PINNED))
        return 0
    with open(args.out + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(args.out + ".tmp", args.out)
    print("wrote %d rules from torchada %s to %s" % (len(table["rules"]), PINNED, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
