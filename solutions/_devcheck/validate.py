"""Check one solution against its task: python validate.py <backend> <task_id> [solution_path]."""
import importlib.util, json, os, sys, time, torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m

backend, tid = sys.argv[1], sys.argv[2]
root = os.environ.get("REPO", "/work/main")
sol_path = sys.argv[3] if len(sys.argv) > 3 else f"{root}/solutions/{backend}/{tid}.py"
dev = "cuda" if backend == "cuda" else "cpu"
task = load(f"{root}/tasks/{tid}.py", "task_mod")
side = {}
if os.path.exists(f"{root}/tasks/{tid}.json"):
    side = json.load(open(f"{root}/tasks/{tid}.json"))
rtol, atol = side.get("rtol", 1e-3), side.get("atol", 1e-3)
t0 = time.time()
sol = load(sol_path, "sol_mod")
build_s = time.time() - t0
ok, worst, worst_strict, worst_ref_gap = True, 0.0, 0.0, 0.0
for seed in [0, 1, 2, 3, 7, 12345]:
    torch.manual_seed(seed); ref = task.Model(*task.get_init_inputs()).to(dev)
    torch.manual_seed(seed); new = sol.ModelNew(*task.get_init_inputs()).to(dev)
    torch.manual_seed(seed + 1000); inputs = [x.to(dev) for x in task.get_inputs()]
    keep = [x.clone() for x in inputs]
    want = ref(*[x.clone() for x in inputs])
    if dev == "cuda":  # what the reference gives with TF32 off (PyTorch lets cuDNN use TF32 by default)
        tf = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
        torch.backends.cudnn.allow_tf32 = False; torch.backends.cuda.matmul.allow_tf32 = False
        want_strict = ref(*[x.clone() for x in inputs])
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf
    got = new(*inputs)
    if dev == "cuda": torch.cuda.synchronize()
    msg = ""
    if not isinstance(got, torch.Tensor): msg = f"not a tensor: {type(got)}"
    elif got.shape != want.shape: msg = f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    elif got.dtype != want.dtype: msg = f"dtype {got.dtype} != {want.dtype}"
    elif got.device != want.device: msg = f"device {got.device} != {want.device}"
    else:
        g, w = got.double(), want.double()
        err = (g - w).abs(); excess = (err - (atol + rtol * w.abs())).max().item()
        worst = max(worst, err.max().item())
        if dev == "cuda" and want_strict.dtype.is_floating_point:
            worst_strict = max(worst_strict, (g - want_strict.double()).abs().max().item())
            worst_ref_gap = max(worst_ref_gap, (w - want_strict.double()).abs().max().item())
        if torch.isnan(g).any() or not torch.allclose(got, want, rtol=rtol, atol=atol): msg = f"mismatch max_abs_err={err.max().item():.3g} excess={excess:.3g}"
    if any(not torch.equal(a, b) for a, b in zip(inputs, keep)): msg += " (inputs mutated)"
    if msg:
        ok = False; print(f"FAIL {backend} {tid} seed={seed}: {msg}"); break
if ok:
    with torch.no_grad():
        for _ in range(3): new(*inputs)
        if dev == "cuda": torch.cuda.synchronize()
        t = time.perf_counter(); n = 20
        for _ in range(n): new(*inputs)
        if dev == "cuda": torch.cuda.synchronize()
        t_new = (time.perf_counter() - t) / n
        t = time.perf_counter()
        for _ in range(n): ref(*inputs)
        if dev == "cuda": torch.cuda.synchronize()
        t_ref = (time.perf_counter() - t) / n
    print(f"PASS {backend} {tid} max_abs_err={worst:.3g} rtol={rtol} atol={atol} build={build_s:.1f}s{f' err_vs_strict_fp32_ref={worst_strict:.3g} tf32_ref_gap={worst_ref_gap:.3g}' if dev == 'cuda' else ''} new={t_new*1e3:.3f}ms ref={t_ref*1e3:.3f}ms")
