#!/usr/bin/env bash
# perf/compile_throughput/nvcc_costs.sh: nvcc's wall time for one small kernel (the bundled
# elementwise/add solution's CUDA source) compiled as the lean build path compiles it, against
# the same kernel with fewer headers in the translation unit, alone and 16 at once (as the
# compile pool runs them on a 16-core machine). Prints one line per variant and concurrency,
# and nvcc's per-phase milliseconds (--time) for each variant alone.
#   lean      the lean path's translation unit (<torch/types.h> from src/mooreeval/compile/lean/shadow),
#             without <string> as the lean path compiles it (the kernel names no std::string)
#   lean+str  the same with <string>, as for a source that names std::string
#   stl       the kernel with <vector> and <string> only
#   bare      the kernel with no header but <cstdint>
# Usage:  bash perf/compile_throughput/nvcc_costs.sh [ARCH, default from the first GPU or 90] [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
arch=${1:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.' || true)}
arch=${arch:-90}
out=${2:-$(mktemp -d /tmp/nvcc-costs-XXXXXX)}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
mkdir -p "$out"
lean="$root/src/mooreeval/compile/lean"
python3 - "$root/solutions/cuda/elementwise/add.py" "$out" <<'EOF'
import re, sys
src = open(sys.argv[1]).read()
cu = re.search(r'cuda_source = r"""(.*?)"""', src, re.S).group(1)
kernel = cu[:cu.index("torch::Tensor")]
launch = "\nvoid launch(const float* a, const float* b, float* o, int64_t n) { add_kernel<<<1, 256>>>(a, b, o, n); }\n"
out = sys.argv[2]
open(out + "/lean+str.cu", "w").write("#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n" + cu)
open(out + "/lean.cu", "w").write("#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n" + cu)
open(out + "/stl.cu", "w").write("#include <vector>\n#include <string>\n" + kernel + launch)
open(out + "/bare.cu", "w").write("#include <cstdint>\n" + kernel + launch)
EOF
flags=(-DTORCH_EXTENSION_NAME=x -DTORCH_API_INCLUDE_EXTENSION_H -DMOOREEVAL_LEAN_CUDA -isystem "$lean/shadow"
  -isystem "$lean/include" -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__
  -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__ --expt-relaxed-constexpr
  "-gencode=arch=compute_$arch,code=sm_$arch" --compiler-options -fPIC -std=c++17)
for v in lean lean+str stl bare; do
  vflags=()
  [ "$v" = lean ] && vflags=(-DMOOREEVAL_LEAN_NO_STRING)
  for n in 1 16; do
    start=$(date +%s.%N)
    for i in $(seq "$n"); do "$nvcc" "${flags[@]}" "${vflags[@]}" -c "$out/$v.cu" -o "$out/$v.$i.o" & done
    wait
    end=$(date +%s.%N)
    printf 'nvcc %-8s x%-2d  %.2f s wall\n' "$v" "$n" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')"
  done
  rm -f "$out/$v.time.csv"
  "$nvcc" "${flags[@]}" "${vflags[@]}" -c "$out/$v.cu" -o "$out/$v.o" --time "$out/$v.time.csv"
  printf 'nvcc %-8s phases (ms):' "$v"
  awk -F, 'NR > 1 && $7 + 0 > 1 { gsub(/^ +| +$/, "", $2); printf " %s %.0f;", $2, $7 }' "$out/$v.time.csv"
  echo
done
