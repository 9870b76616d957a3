#!/usr/bin/env bash
# Populates <repo>/.realsubs/ with the real KernelBench submissions listed in manifest.json and their
# KernelBench reference tasks, read from local bare mirrors of the source repositories. Idempotent: the
# whole tree is rebuilt in a temporary folder and swapped in, so a failed run leaves the old copy intact.
#
# Usage: dev/real_submissions/fetch.sh [--mirror OWNER/NAME=GIT_DIR]... [--out DIR]
#   Mirrors default to $MIRROR_DIR/<owner>+<name>/repo (MIRROR_DIR defaults to /work/.mirror).
#   Needs git and python3; nothing is downloaded, nothing is compiled.
# The fetched code is third-party and is NOT committed (.realsubs/ is git-ignored via .git/info/exclude).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/.realsubs"
overrides=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --mirror) overrides+=("$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "fetch.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if ! grep -qxF '/.realsubs/' "$root/.git/info/exclude" 2>/dev/null; then
  echo "fetch.sh: warning: '/.realsubs/' is not in .git/info/exclude; add it so the copies are never committed" >&2
fi

stage=$(mktemp -d "${TMPDIR:-/tmp}/realsubs.XXXXXX")
trap 'rm -rf "$stage"' EXIT

MANIFEST="$here/manifest.json" STAGE="$stage" MIRROR_DIR="${MIRROR_DIR:-/work/.mirror}" \
OVERRIDES="$(printf '%s\n' "${overrides[@]+"${overrides[@]}"}")" python3 - <<'PY'
import json, os, subprocess, sys

manifest = json.load(open(os.environ["MANIFEST"]))
stage = os.environ["STAGE"]
mirror_dir = os.environ["MIRROR_DIR"]
override = dict(l.split("=", 1) for l in os.environ["OVERRIDES"].splitlines() if "=" in l)

def git_dir(repo):
    d = override.get(repo) or os.path.join(mirror_dir, repo.replace("/", "+"), "repo")
    if not os.path.isdir(d):
        sys.exit(f"fetch.sh: no mirror of {repo} at {d}; bring it with the session's fetch tool "
                 f"(github:{repo}) or pass --mirror {repo}=GIT_DIR")
    return d

cache = {}
def show(repo, commit, path):
    key = (repo, commit, path)
    if key not in cache:
        r = subprocess.run(["git", "--git-dir=" + git_dir(repo), "show", f"{commit}:{path}"],
                           capture_output=True)
        if r.returncode != 0:
            sys.exit(f"fetch.sh: {repo}@{commit[:12]} has no {path}: {r.stderr.decode().strip()}")
        cache[key] = r.stdout.decode("utf-8")
    return cache[key]

def extract(e):
    text = show(e["repo"], e["commit"], e["path"])
    x = e.get("extract")
    if not x:
        return text
    if x["format"] != "jsonl":
        sys.exit(f"fetch.sh: unknown extract format {x['format']!r}")
    for line in text.splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if all(row.get(k) == v for k, v in x["match"].items()):
            return row[x["field"]]
    sys.exit(f"fetch.sh: no row {x['match']} in {e['repo']}:{e['path']}")

def write(rel, text):
    dst = os.path.join(stage, rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.exists(dst):
        if open(dst).read() != text:
            sys.exit(f"fetch.sh: two different contents for {rel}")
        return
    with open(dst, "w") as f:
        f.write(text)

for e in manifest:
    task = show(e["task_repo"], e["task_commit"], e["task_path"])
    sample = extract(e)
    if "class Model(" not in task:
        sys.exit(f"fetch.sh: {e['task_path']} has no class Model")
    if "class ModelNew" not in sample or "load_inline" not in sample:
        sys.exit(f"fetch.sh: {e['sample']} is not a load_inline ModelNew submission")
    write(e["task"], task)
    write(e["sample"], sample)
json.dump(manifest, open(os.path.join(stage, "manifest.json"), "w"), indent=1)
print(f"fetch.sh: {len(manifest)} samples for {len({e['task'] for e in manifest})} tasks")
PY

size_kb=$(du -sk "$stage" | cut -f1)
if (( size_kb > 20 * 1024 )); then
  echo "fetch.sh: staged tree is ${size_kb} KiB, over the 20 MiB budget" >&2
  exit 1
fi
if [[ -e "$out" && ! -f "$out/manifest.json" ]]; then
  echo "fetch.sh: $out exists and was not written by this script; refusing to replace it" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$(dirname "$out")"
cp -R "$stage" "$out"
echo "fetch.sh: wrote $out (${size_kb} KiB)"
