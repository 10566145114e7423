"""The disk cache seen from Python: hits in a new process, processes racing
on a cold cache, and damaged entries (corrupted, truncated, unreadable, a
file where a directory belongs or the other way round) being rebuilt."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

KERNEL_MODULE = textwrap.dedent('''
    import numpy as np
    import plait

    @plait.jit
    def cumulative(x):
        out = np.empty(x.shape[0])
        total = 0.0
        for i in range(x.shape[0]):
            total += x[i]
            out[i] = total
        return out
''')

RUNNER = textwrap.dedent('''
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    from cached_kernels import cumulative
    x = np.arange(10.0)
    out = cumulative(x)
    print(json.dumps({
        "ok": bool(np.array_equal(out, np.cumsum(x))),
        "from_disk_cache": cumulative.from_disk_cache(),
        "library_path": cumulative.library_path(),
    }))
''')


@pytest.fixture
def workspace(tmp_path):
    """A kernel module, a runner script and an empty cache directory."""
    (tmp_path / "cached_kernels.py").write_text(KERNEL_MODULE)
    (tmp_path / "runner.py").write_text(RUNNER)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    return tmp_path, cache


def start(workspace):
    directory, cache = workspace
    env = dict(os.environ, PLAIT_CACHE_DIR=str(cache))
    return subprocess.Popen([sys.executable, str(directory / "runner.py"), str(directory)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process):
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def run(workspace):
    return finish(start(workspace))


def test_a_new_process_finds_the_library_in_the_disk_cache(workspace):
    first = run(workspace)
    assert first["ok"] and not first["from_disk_cache"]
    second = run(workspace)
    assert second["ok"] and second["from_disk_cache"]
    assert second["library_path"] == first["library_path"]
    assert os.path.isfile(first["library_path"])
    assert first["library_path"].startswith(str(workspace[1]))


def test_processes_racing_on_a_cold_cache_all_succeed(workspace):
    processes = [start(workspace) for _ in range(3)]
    results = [finish(p) for p in processes]
    assert all(r["ok"] for r in results)
    assert len({r["library_path"] for r in results}) == 1
    later = run(workspace)
    assert later["ok"] and later["from_disk_cache"]


def test_a_corrupted_library_is_rebuilt(workspace):
    first = run(workspace)
    library = first["library_path"]
    with open(library, "wb") as f:
        f.write(b"\x7fELF this is not a shared object")
    rebuilt = run(workspace)
    assert rebuilt["ok"] and not rebuilt["from_disk_cache"]
    with open(rebuilt["library_path"], "rb") as f:
        assert f.read(4) == b"\x7fELF" and os.path.getsize(rebuilt["library_path"]) > 1000
    again = run(workspace)
    assert again["ok"] and again["from_disk_cache"]


def _make_unreadable_directory(path):
    path.mkdir()
    (path / "inner").write_text("x")
    path.chmod(0)


DAMAGE = {
    # each takes the entry directory (<cache>/<key[:2]>/<key>) and damages it
    "library replaced by a directory": lambda entry: (os.remove(entry / "kernel.so"),
                                                      (entry / "kernel.so").mkdir()),
    "checksum replaced by a directory": lambda entry: (os.remove(entry / "kernel.sha256"),
                                                       (entry / "kernel.sha256").mkdir()),
    "library replaced by an unreadable directory": lambda entry: (os.remove(entry / "kernel.so"),
                                                                  _make_unreadable_directory(entry / "kernel.so")),
    "truncated library": lambda entry: os.truncate(entry / "kernel.so", 100),
    "wrong checksum": lambda entry: (entry / "kernel.sha256").write_text("0" * 64 + "\n"),
    "unreadable library": lambda entry: (entry / "kernel.so").chmod(0),
    "unreadable entry": lambda entry: entry.chmod(0),
    "entry replaced by a file": lambda entry: (shutil.rmtree(entry), entry.write_text("not an entry")),
    "shard replaced by a file": lambda entry: (shutil.rmtree(entry.parent), entry.parent.write_text("x")),
    "unreadable shard": lambda entry: entry.parent.chmod(0),
}


NEEDS_PERMISSIONS = {name for name in DAMAGE if "unreadable" in name}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_entry_is_a_miss_that_is_rebuilt(workspace, damage):
    if damage in NEEDS_PERMISSIONS and os.geteuid() == 0:
        pytest.skip("root reads files whatever their permissions")
    first = run(workspace)
    entry = pathlib.Path(first["library_path"]).parent
    DAMAGE[damage](entry)
    rebuilt = run(workspace)
    assert rebuilt["ok"] and not rebuilt["from_disk_cache"]
    assert rebuilt["library_path"] == first["library_path"]
    again = run(workspace)
    assert again["ok"] and again["from_disk_cache"]
    assert not [name for name in os.listdir(workspace[1]) if name.startswith(("trash-", "build-"))]
