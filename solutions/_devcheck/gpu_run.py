"""Device-side check: validate every CUDA solution and probe every CUDA fixture. Run from the repo root."""
import glob, json, os, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
here = os.path.dirname(os.path.abspath(__file__))
root = os.getcwd()
env = dict(os.environ, REPO=root, TORCH_EXTENSIONS_DIR="/tmp/ext", MAX_JOBS="2", PYTHONUNBUFFERED="1")
out_dir = os.environ.get("OUT", "/tmp/out")
only = sys.argv[1:]
tids = sorted(p[len(root) + 7:-3] for p in glob.glob(f"{root}/tasks/*/*.py"))
sel = os.environ.get("SEL", "all")
if only: tids = [t for t in tids if t in only]
if sel == "fixtures": tids = []
fx = json.load(open(f"{root}/tests/fixtures/candidates/manifest.json"))
fx = [e["file"] for e in fx if "cuda" in e["backends"] and (not only or e["file"] in only) and sel != "tasks"]
t0 = time.time()
def run(cmd, limit):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, env=env)
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        return "timeout", e.stdout or "", e.stderr or ""
jobs = [("task", t, [sys.executable, f"{here}/validate.py", "cuda", t]) for t in tids]
jobs += [("fixture", f, [sys.executable, f"{here}/run_fixtures.py", "cuda", "400", f]) for f in fx if f != "infinite_loop_cuda.py"]
if "infinite_loop_cuda.py" in fx:  # build only now (import compiles, nothing launches); run it alone at the end
    jobs.append(("prebuild", "infinite_loop_cuda.py", [sys.executable, "-c",
        "import importlib.util as u; s=u.spec_from_file_location('c','tests/fixtures/candidates/infinite_loop_cuda.py'); m=u.module_from_spec(s); s.loader.exec_module(m); print('built')"]))
log = open(f"{out_dir}/gpu_log.txt", "w")
def job(j):
    kind, name, cmd = j
    rc, so, se = run(cmd, 420)
    line = so.strip().splitlines()[-1] if so.strip() else ""
    res = f"[{time.time()-t0:5.0f}s] {kind:8s} {name:32s} rc={rc} {line}"
    if rc != 0 or not line:
        res += "\n    stderr tail: " + " | ".join(se.strip().splitlines()[-12:])
    print(res, flush=True); log.write(res + "\n"); log.flush()
with ThreadPoolExecutor(max_workers=int(os.environ.get("POOL", "14"))) as ex:
    list(ex.map(job, jobs))
if "infinite_loop_cuda.py" in fx:
    job(("fixture", "infinite_loop_cuda.py", [sys.executable, f"{here}/run_fixtures.py", "cuda", "45", "infinite_loop_cuda.py"]))
    r = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv"], capture_output=True, text=True)
    print("after timeout kill:", r.stdout.strip().replace("\n", " | "))
print(f"total {time.time()-t0:.0f}s")
