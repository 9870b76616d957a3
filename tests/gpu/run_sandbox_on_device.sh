#!/usr/bin/env bash
# The sandbox on the GPU machine, in a few minutes: builds only what it needs against the
# carried Debian packages (libseccomp-dev, libseccomp2, bubblewrap: fetched with
# ../shared/device/fetch-debs libseccomp-dev libseccomp2 bubblewrap), reports what the
# machine offers (root, capabilities, cgroup version, user namespaces), runs the gpu-labelled
# sandbox tests and the overhead benchmark.
# Usage there:  source .devdeps/unpack && bash tests/gpu/run_sandbox_on_device.sh
set -uo pipefail
OUT="${OUT:-/tmp/mooreeval-gpu-out}"
mkdir -p "$OUT"
export PATH="/opt/devdeps/usr/bin:$PATH"  # bwrap from the carried .deb when the machine has none
echo "== machine"
id; uname -r; nvidia-smi -L
echo "bwrap: $(command -v bwrap) $(bwrap --version 2>&1)"; echo "setpriv: $(command -v setpriv)"
grep -E '^Cap(Eff|Bnd)' /proc/self/status
stat -fc 'cgroup fs: %T' /sys/fs/cgroup; cat /proc/self/cgroup
cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns 2>/dev/null | sed 's/^/apparmor_restrict_unprivileged_userns=/'
ls -l /dev/nvidia* 2>&1 | head
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMUSACODER_WERROR=OFF -DMUSACODER_BUILD_PERF=ON >"$OUT/cmake.log" 2>&1 \
  || { tail -50 "$OUT/cmake.log"; exit 1; }
ninja -C build-gpu -j16 sandbox_gpu_tests sandbox_integration_tests sandbox_overhead_bench >"$OUT/build.log" 2>&1 \
  || { grep -E "error" -A3 "$OUT/build.log" | head -60; exit 1; }
echo "== sandbox_integration_tests (the cpu-side guarantees on this machine)"
build-gpu/tests/integration/sandbox/sandbox_integration_tests 2>&1 | tee "$OUT/sandbox_integration.log" \
  | grep -E "^\[  (PASSED|FAILED|SKIPPED)|Failure|mooreeval:" | head -40
echo "== sandbox_gpu_tests"
timeout 420 build-gpu/tests/gpu/sandbox_gpu_tests 2>&1 | tee "$OUT/sandbox_gpu.log" \
  | grep -E "GPU_RESULT|^\[  (PASSED|FAILED|SKIPPED)|Failure|mooreeval:" | head -40
echo "== sandbox_overhead_bench"
build-gpu/perf/sandbox_overhead_bench --iters 40 2>&1 | tee "$OUT/sandbox_overhead.txt"
