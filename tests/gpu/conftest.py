"""Fixtures of the CUDA tests. The disk cache goes to a fresh temporary
directory for the session, set before any test module imports plait."""

import os
import shutil
import tempfile

_SESSION_CACHE = tempfile.mkdtemp(prefix="plait-gpu-test-cache-")
# When tests/python runs in the same session its conftest sets its own; keep
# whichever test directory is set, never the user's cache.
if "plait-test-cache-" not in os.environ.get("PLAIT_CACHE_DIR", ""):
    os.environ["PLAIT_CACHE_DIR"] = _SESSION_CACHE
for _name in ("PLAIT_DISABLE_JIT", "PLAIT_BOUNDSCHECK", "PLAIT_DUMP_DIR", "PLAIT_EXPLAIN"):
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402
import pytest  # noqa: E402


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


@pytest.fixture
def rng(request):
    """A generator seeded from the test's name: fresh, reproducible inputs."""
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.nodeid)) % (2**32)
    return np.random.default_rng(seed)
