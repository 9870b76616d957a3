"""Crude stand-in for the verifier, to check that each fixture fails the way its manifest says.
python probe.py <backend> <candidate file>; prints 'OBSERVED <class> <detail>' (timeouts/signals are the parent's)."""
import importlib.util, os, re, sys, tempfile, traceback
backend, path = sys.argv[1], sys.argv[2]
root = os.environ.get("REPO", "/work/main")
text = open(path).read()
if path.endswith((".md", ".txt")):
    m = re.search(r"```(?:python|py)\n(.*?)```", text, re.S)
    if not m:
        print("OBSERVED format_error no fenced python block"); sys.exit(0)
    text = m.group(1)
try:
    compile(text, path, "exec")
except SyntaxError as e:
    print(f"OBSERVED format_error SyntaxError line {e.lineno}"); sys.exit(0)
if "class ModelNew" not in text:
    print("OBSERVED format_error no ModelNew"); sys.exit(0)
src = os.path.join(tempfile.mkdtemp(), "cand.py"); open(src, "w").write(text)
import torch
def load(p, name):
    spec = importlib.util.spec_from_file_location(name, p); mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod); return mod
task = load(f"{root}/tasks/elementwise/add.py", "task")
try:
    cand = load(src, "cand")
except Exception as e:
    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
    kind = "compile_error" if "Error building extension" in str(e) or "error" in str(e).lower() and "build" in str(e).lower() else "import_error"
    print(f"OBSERVED {kind} {type(e).__name__}: {msg[:200]}"); sys.exit(0)
if not hasattr(cand, "ModelNew"):
    print("OBSERVED format_error no ModelNew after import"); sys.exit(0)
dev = "cuda" if backend == "cuda" else "cpu"
print("BUILT", flush=True)
try:
    torch.manual_seed(0); ref = task.Model().to(dev)
    torch.manual_seed(0); new = cand.ModelNew().to(dev)
    torch.manual_seed(1); inputs = [x.to(dev) for x in task.get_inputs()]
    want = ref(*inputs)
    got = new(*inputs)
    if dev == "cuda": torch.cuda.synchronize()
except Exception as e:
    print(f"OBSERVED runtime_error {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"); sys.exit(0)
if got.shape != want.shape:
    print(f"OBSERVED wrong_answer shape {tuple(got.shape)} vs {tuple(want.shape)}"); sys.exit(0)
if torch.isnan(got).any():
    print(f"OBSERVED wrong_answer {int(torch.isnan(got).sum())} NaN"); sys.exit(0)
if not torch.allclose(got, want, rtol=1e-3, atol=1e-3):
    print(f"OBSERVED wrong_answer max_abs_err={(got - want).abs().max().item():.3g}"); sys.exit(0)
print("OBSERVED numerically_ok")
