"""Odd shapes / other init args through every solution: python edge.py <backend> [task_id...]."""
import importlib.util, os, sys, torch
backend = sys.argv[1]; dev = "cuda" if backend == "cuda" else "cpu"
root = os.environ.get("REPO", "/work/main")
def load(p, n):
    s = importlib.util.spec_from_file_location(n, p); m = importlib.util.module_from_spec(s); s.loader.exec_module(m); return m
R = torch.randn
V = {
 "elementwise/add": [([], lambda: [R(1001), R(1001)]), ([], lambda: [R(3, 5, 7), R(3, 5, 7)])],
 "elementwise/scale_shift": [([-2.0, 0.5], lambda: [R(999)])],
 "elementwise/clamp": [([-1.0, 0.1], lambda: [R(7, 13)])],
 "elementwise/fma": [([], lambda: [R(333), R(333), R(333)])],
 "activation/relu": [([], lambda: [R(1001)])], "activation/gelu": [([], lambda: [R(1001) * 4])],
 "activation/sigmoid": [([], lambda: [R(1001) * 30])], "activation/silu": [([], lambda: [R(1001) * 30])],
 "activation/leaky_relu": [([0.2], lambda: [R(1001)])],
 "reduction/sum_dim": [([d], lambda: [R(5, 33, 70)]) for d in (0, 2, -1)],
 "reduction/mean_dim": [([d], lambda: [R(5, 33, 70)]) for d in (0, 2, -1)],
 "reduction/max_dim": [([d], lambda: [R(5, 33, 70)]) for d in (0, 1, -3)],
 "reduction/argmax_dim": [([d], lambda: [R(5, 33, 70)]) for d in (0, 2, -1)] + [([1], lambda: [R(2, 1000, 3)])],
 "norm/softmax": [([], lambda: [R(7, 1000)]), ([], lambda: [R(3, 5, 37) * 10])],
 "norm/log_softmax": [([], lambda: [R(7, 1000)]), ([], lambda: [R(3, 5, 37) * 10])],
 "norm/layernorm": [([37], lambda: [R(4, 37) * 3 + 1]), ([1000], lambda: [R(3, 1000)])],
 "norm/rmsnorm": [([37, 1e-5], lambda: [R(5, 37)]), ([1000, 1e-6], lambda: [R(3, 1000)])],
 "matmul/matmul": [([], lambda: [R(37, 50), R(50, 29)]), ([], lambda: [R(1, 17), R(17, 1)])],
 "matmul/batched_matmul": [([], lambda: [R(3, 17, 33), R(3, 33, 19)])],
 "matmul/matvec": [([], lambda: [R(37, 1000), R(1000, 1)]), ([], lambda: [R(9, 7), R(7, 1)])],
 "matmul/linear": [([50, 29], lambda: [R(7, 50)])],
 "fusion/linear_relu": [([50, 29], lambda: [R(7, 50)])],
 "conv/conv1d": [([3, 5, 4, 2, 1], lambda: [R(2, 3, 37)]), ([4, 6, 3, 1, 0], lambda: [R(1, 4, 9)])],
 "conv/conv2d": [([3, 6, 5, 2, 2], lambda: [R(2, 3, 17, 19)]), ([2, 4, 1, 1, 0], lambda: [R(1, 2, 5, 6)])],
 "conv/depthwise_conv2d": [([6, 5, 2, 2], lambda: [R(2, 6, 17, 19)])],
 "fusion/conv2d_bias_relu": [([3, 5, 4], lambda: [R(2, 3, 11, 13)])],
 "fusion/add_layernorm": [([77], lambda: [R(5, 77), R(5, 77)])],
 "fusion/scale_softmax": [([0.3], lambda: [R(5, 77) * 10])],
}
ids = sys.argv[2:] or sorted(V)
bad = 0
for tid in ids:
    task = load(f"{root}/tasks/{tid}.py", "t_" + tid.replace("/", "_"))
    sol = load(f"{root}/solutions/{backend}/{tid}.py", "s_" + tid.replace("/", "_"))
    for init, mk in V[tid]:
        torch.manual_seed(3); ref = task.Model(*init).to(dev)
        torch.manual_seed(3); new = sol.ModelNew(*init).to(dev)
        torch.manual_seed(4); xs = [x.to(dev) for x in mk()]
        want = ref(*xs); got = new(*xs)
        ok = got.shape == want.shape and got.dtype == want.dtype and not (got.is_floating_point() and torch.isnan(got).any()) \
            and (torch.equal(got, want) if not want.is_floating_point() else torch.allclose(got, want, rtol=1e-3, atol=1e-3))
        bad += not ok
        err = (got.double() - want.double()).abs().max().item() if got.shape == want.shape else float("nan")
        print(f"{'ok  ' if ok else 'BAD '} {backend} {tid} init={init} in={[tuple(x.shape) for x in xs]} out={tuple(got.shape)} err={err:.3g}", flush=True)
print("EDGE", "ALL OK" if not bad else f"{bad} BAD")
