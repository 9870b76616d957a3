"""guards.BusyThreadProbe against an idle OpenMP pool (issue #29: an honest `omp parallel` kernel was rejected as
`busy_background_thread` on a loaded machine). A pool told to spin (OMP_WAIT_POLICY=ACTIVE) is runnable long after
its parallel region ended and the probe flags it; the passive pool the runners get (runner_environment) sleeps at
once and is never flagged. Each case runs in a fresh interpreter: libgomp reads the policy when it loads."""
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = r"""
import json, sys
import torch
from mooreeval_runner.guards import BusyThreadProbe
torch.set_num_threads(2)
x = torch.randn(1 << 22)
for _ in range(20):
    y = (x * 1.5).exp().sum()  # parallel regions over both threads
probe = BusyThreadProbe(settle_s=0.02)
print(json.dumps({"busy": probe.busy(window_s=0.08)}))
"""


def busy_threads(policy):
    env = dict(os.environ, OMP_WAIT_POLICY=policy, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])["busy"]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two CPUs for a second OpenMP thread")
def test_passive_pool_is_never_busy_and_a_spinning_one_is():
    assert busy_threads("PASSIVE") == []
    assert len(busy_threads("ACTIVE")) >= 1
