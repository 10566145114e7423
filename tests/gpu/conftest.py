"""Fixtures of the CUDA tests. The disk cache is the run's fresh temporary
directory (tests/conftest.py sets PLAIT_CACHE_DIR before any test module
imports plait)."""

import os

for _name in ("PLAIT_DISABLE_JIT", "PLAIT_BOUNDSCHECK", "PLAIT_DUMP_DIR", "PLAIT_EXPLAIN"):
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def rng(request):
    """A generator seeded from the test's name: fresh, reproducible inputs."""
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.nodeid)) % (2**32)
    return np.random.default_rng(seed)
