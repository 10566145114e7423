"""What every test process shares: one disk cache for the whole run, and
the IR verifier after every pass of every kernel compiled (PLAIT_VERIFY_IR,
analysis/verify_ir.h; it never changes what is generated).

`make test` runs pytest in several processes (pytest-xdist). The first
process to load this file (xdist's controller, or the only process) makes a
fresh cache directory and sets PLAIT_CACHE_DIR, which the worker processes
it starts inherit: a kernel that tests in several processes compile is built
once per run, as in one process, and never in the user's cache. The process
that made the directory removes it at the end.
"""

import os
import shutil
import tempfile

os.environ["PLAIT_VERIFY_IR"] = "1"

_PREFIX = "plait-test-cache-"
_OWN_CACHE = None
if _PREFIX not in os.environ.get("PLAIT_CACHE_DIR", ""):
    _OWN_CACHE = tempfile.mkdtemp(prefix=_PREFIX)
    os.environ["PLAIT_CACHE_DIR"] = _OWN_CACHE


def pytest_sessionfinish(session, exitstatus):
    if _OWN_CACHE is not None:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)
