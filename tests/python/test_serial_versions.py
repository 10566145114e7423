"""The serial code of parallel loops and regions: a time loop run as one
parallel region has a serial version for when its work does not pay for a
team, and a parallel loop inside a serial loop a serial branch for the same
(codegen/cpu). The other tests run with every loop threaded
(PLAIT_PARALLEL_THRESHOLD=0, conftest.py); these run the differential tests
of the regions, of parallel loops and of their run-time errors again with no
loop threaded, in a process of their own (the threshold is read once)."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = ["test_parallel_regions.py", "test_loops_parallel.py", "test_loops_runtime_errors.py", "test_calls.py",
           "test_lists.py", "test_dicts.py"]


@pytest.mark.parametrize("module", MODULES)
def test_modules_pass_with_no_loop_threaded(module):
    env = dict(os.environ, PLAIT_PARALLEL_THRESHOLD=str(2**62))
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:randomly",
                             os.path.join(HERE, module)], env=env, capture_output=True, text=True, timeout=1200,
                            cwd=HERE)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
