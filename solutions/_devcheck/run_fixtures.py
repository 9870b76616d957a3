"""python run_fixtures.py <backend> [timeout_s] [file...]: run probe.py on every manifest entry for the backend."""
import json, os, subprocess, sys, time
backend = sys.argv[1]; limit = float(sys.argv[2]) if len(sys.argv) > 2 else 120
only = set(sys.argv[3:])
root = os.environ.get("REPO", "/work/main"); here = os.path.dirname(os.path.abspath(__file__))
fx = f"{root}/tests/fixtures/candidates"
for e in json.load(open(f"{fx}/manifest.json")):
    if backend not in e["backends"] or (only and e["file"] not in only): continue
    t0 = time.time()
    p = subprocess.Popen([sys.executable, f"{here}/probe.py", backend, f"{fx}/{e['file']}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=limit)
        lines = [l for l in out.splitlines() if l.startswith("OBSERVED")]
        obs = lines[-1][9:] if lines else (f"runtime_error killed by signal {-p.returncode}" if p.returncode < 0 else f"runtime_error rc={p.returncode} {err.strip().splitlines()[-1][:150] if err.strip() else ''}")
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9); out, err = p.communicate()
        obs = f"timeout after {limit:.0f}s ({'built' if 'BUILT' in out else 'not built'})"
    cls = obs.split()[0]
    exp = e["expected"]
    good = cls == exp or (exp == "ok" and cls == "numerically_ok") or (exp == "illegal" and cls == "numerically_ok")
    print(f"{'AS-EXPECTED' if good else 'UNEXPECTED '} {e['file']:28s} expected={exp:13s} observed={obs}  ({time.time()-t0:.0f}s)", flush=True)
