"""Build every solution of a backend in parallel (import = load_inline): python prebuild.py <backend>."""
import glob, os, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
backend = sys.argv[1]; t0 = time.time()
files = sorted(glob.glob(f"solutions/{backend}/*/*.py"))
code = "import importlib.util as u,sys; s=u.spec_from_file_location('m',sys.argv[1]); m=u.module_from_spec(s); s.loader.exec_module(m)"
def build(f):
    r = subprocess.run([sys.executable, "-c", code, f], capture_output=True, text=True)
    print(f"[{time.time()-t0:4.0f}s] build {f} rc={r.returncode} {r.stderr.strip().splitlines()[-1][:200] if r.returncode else ''}", flush=True)
with ThreadPoolExecutor(int(os.environ.get("POOL", "14"))) as ex: list(ex.map(build, files))
