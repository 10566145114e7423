"""Large arrays that kernels allocate come from plait's pool of host memory:
a freed array's block serves the next allocation of the same size, so its
pages are not faulted in (and zeroed by the system) again."""

import os
import subprocess
import sys

import numpy as np

import plait
from oracle import check, rng_for


def scaled(a, s):
    return a * s


def zeros_like_plus(a):
    z = np.zeros(a.shape)
    z[1:] = a[:-1]
    return z


def test_freed_result_block_is_reused():
    kernel = plait.jit(scaled)
    a = rng_for("pool").random(1 << 20)  # 8 MiB: from the pool
    plait.release_memory_pool()
    first = kernel(a, 2.0)
    address = first.ctypes.data
    assert plait.memory_pool_stats()["free_blocks"] == 0
    del first
    assert plait.memory_pool_stats()["free_blocks"] == 1
    second = kernel(a, 3.0)
    assert second.ctypes.data == address
    assert plait.memory_pool_stats()["free_blocks"] == 0
    np.testing.assert_array_equal(second, a * 3.0)
    plait.release_memory_pool()


def test_reused_block_is_refilled():
    # np.zeros must not see the old contents of a reused block.
    kernel = plait.jit(zeros_like_plus)
    a = rng_for("pool zeros").random(1 << 20) + 1.0
    for _ in range(3):
        check(kernel, a)


def test_small_arrays_do_not_use_the_pool():
    kernel = plait.jit(scaled)
    plait.release_memory_pool()
    kernel(np.ones(1000), 2.0)  # 8 KB, freed at once
    assert plait.memory_pool_stats()["free_blocks"] == 0


def test_budget_from_the_environment():
    env = dict(os.environ, PLAIT_HOST_MEMORY_POOL="0")
    script = (
        "import numpy as np, plait, sys\n"
        "sys.path.insert(0, %r)\n"
        "from test_memory_pool import scaled\n"
        "k = plait.jit(scaled)\n"
        "k(np.ones(1 << 20), 2.0)\n"
        "s = plait.memory_pool_stats()\n"
        "print(s['budget_bytes'], s['free_blocks'])\n"
    ) % os.path.dirname(__file__)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env).stdout
    assert out.split() == ["0", "0"]
