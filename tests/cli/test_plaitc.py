"""Tests of the plaitc driver: outputs, the shared object it builds (called
through ctypes with the C ABI of src/runtime/abi.h) and its exit codes."""
import ctypes
import os
import pathlib
import stat
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
KERNELS = HERE / "kernels"
VECTOR_OPS = KERNELS / "vector_ops.py"
# The plaitc installed beside this Python (make test sets PLAIT_PLAITC to it).
PLAITC = pathlib.Path(os.environ.get("PLAIT_PLAITC", pathlib.Path(sys.executable).with_name("plaitc")))

pytestmark = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")

MAX_NDIM = 4


class PlaitArray(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int64 * MAX_NDIM),
                ("strides", ctypes.c_int64 * MAX_NDIM)]


class PlaitResult(ctypes.Structure):
    _fields_ = [("is_array", ctypes.c_int32), ("dtype", ctypes.c_int32), ("i64", ctypes.c_int64),
                ("f64", ctypes.c_double), ("b", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("array", PlaitArray), ("owner", ctypes.c_void_p), ("release", ctypes.c_void_p)]


class PlaitContext(ctypes.Structure):
    _fields_ = [("num_threads", ctypes.c_int32), ("error_kind", ctypes.c_int32), ("error_line", ctypes.c_int32),
                ("error_col", ctypes.c_int32), ("error_message", ctypes.c_char * 240), ("cuda", ctypes.c_void_p),
                ("parallel_work_threshold", ctypes.c_int64), ("memory", ctypes.c_void_p)]


def run_plaitc(*args, env_extra=None, cwd=None):
    env = dict(os.environ)
    env.pop("PLAIT_DUMP_DIR", None)
    env.update(env_extra or {})
    return subprocess.run([str(PLAITC), *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


@pytest.fixture
def cache_dir(tmp_path):
    return tmp_path / "cache"


def build_so(tmp_path, cache_dir, name, signature, *extra):
    out = tmp_path / "out"
    result = run_plaitc("compile", f"{VECTOR_OPS}::{name}", "--signature", signature, "--emit", "so", "-o", out,
                        *extra, env_extra={"PLAIT_CACHE_DIR": str(cache_dir)})
    assert result.returncode == 0, result.stderr
    library = out / f"{name}.so"
    assert library.is_file()
    return library


def contiguous_array(values):
    buffer = (ctypes.c_double * len(values))(*values)
    array = PlaitArray()
    array.data = ctypes.cast(buffer, ctypes.c_void_p)
    array.shape[0] = len(values)
    array.strides[0] = 1
    return buffer, array


def call(library_path, arrays):
    library = ctypes.CDLL(str(library_path))
    library.plait_kernel_abi_version.restype = ctypes.c_int32
    assert library.plait_kernel_abi_version() == 9
    entry = library.plait_kernel_entry
    entry.restype = ctypes.c_int32
    entry.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(PlaitResult), ctypes.POINTER(PlaitContext)]
    args = (ctypes.c_void_p * len(arrays))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in arrays])
    results = (PlaitResult * 2)()
    context = PlaitContext(num_threads=2)
    status = entry(args, results, ctypes.byref(context))
    return status, results, context


def test_version():
    result = run_plaitc("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("plaitc ")
    assert "+abi9" in result.stdout


def test_help():
    result = run_plaitc("--help")
    assert result.returncode == 0
    assert "usage: plaitc compile" in result.stdout
    assert "--signature" in result.stdout


@pytest.mark.parametrize("args", [
    [],
    ["frobnicate"],
    ["compile"],
    ["compile", f"{VECTOR_OPS}::scale"],                                   # no --signature
    ["compile", str(VECTOR_OPS), "--signature", "f64[::1], f64[::1]"],    # no ::FUNCTION
    ["compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--emit", "asm"],
    ["compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--bogus"],
    ["compile", f"{VECTOR_OPS}::scale", "--signature", "f99[::1]"],
    ["compile", f"{VECTOR_OPS}::scale", "--signature"],
])
def test_bad_usage_exits_64_with_usage(args, tmp_path):
    result = run_plaitc(*args, cwd=tmp_path)
    assert result.returncode == 64, result.stderr
    assert "usage: plaitc compile" in result.stderr


def test_unreadable_file_exits_66(tmp_path):
    result = run_plaitc("compile", f"{tmp_path / 'missing.py'}::f", "--signature", "f64")
    assert result.returncode == 66
    assert "missing.py" in result.stderr


def test_emit_ir_to_stdout():
    result = run_plaitc("compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--emit", "ir")
    assert result.returncode == 0, result.stderr
    assert "scale" in result.stdout
    assert "parallel for" in result.stdout


def test_emit_ir_to_directory(tmp_path):
    result = run_plaitc("compile", f"{VECTOR_OPS}::total", "--signature", "f64[::1]", "--emit", "ir",
                        "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    text = (tmp_path / "out" / "total.ir").read_text()
    assert "reduction" in text


def test_emit_remarks_without_building(tmp_path):
    base = ["compile", f"{VECTOR_OPS}::total", "--signature", "f64[::1]", "--emit", "remarks"]
    cpu = run_plaitc(*base, "--cache-dir", tmp_path / "cache")
    assert cpu.returncode == 0, cpu.stderr
    assert "vector_ops.py:17: parallel loop over 'i', reduction(+: s)" in cpu.stdout.splitlines()
    assert "CUDA" not in cpu.stdout
    assert not (tmp_path / "cache").exists()  # nothing was built
    # The CUDA code generator's choices, on a machine without a GPU.
    cuda = run_plaitc(*base, "--target", "cuda", "-o", tmp_path / "out")
    assert cuda.returncode == 0, cuda.stderr
    text = (tmp_path / "out" / "total.remarks").read_text()
    assert "parallel loop over `i`: CUDA kernel plait_total_k0" in text
    assert "reduction of `s` on the GPU" in text


def test_emit_cpp_to_stdout():
    result = run_plaitc("compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--emit", "cpp")
    assert result.returncode == 0, result.stderr
    assert "plait_kernel_entry" in result.stdout
    assert "plait_kernel_abi_version" in result.stdout
    assert "#pragma omp" in result.stdout
    assert "vector_ops.py" in result.stdout  # #line directives


def test_emit_cpp_with_boundscheck_differs():
    base = ["compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--emit", "cpp"]
    plain = run_plaitc(*base)
    checked = run_plaitc(*base, "--boundscheck")
    assert plain.returncode == 0 and checked.returncode == 0
    assert plain.stdout != checked.stdout


CUDA_SCALE = ["compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--target", "cuda"]


def test_cuda_launch_options_reach_the_generated_code():
    default = run_plaitc(*CUDA_SCALE, "--emit", "cu")
    tuned = run_plaitc(*CUDA_SCALE, "--emit", "cu", "--cuda-threads", "512", "--cuda-row-groups=2",
                       "--cuda-max-team", "128")
    assert default.returncode == 0 and tuned.returncode == 0, default.stderr + tuned.stderr
    assert "// launch configuration: threads 256, row groups 4, largest team 256" in default.stdout
    assert "__launch_bounds__(256)" in default.stdout
    assert "// launch configuration: threads 512, row groups 2, largest team 128" in tuned.stdout
    assert "__launch_bounds__(512)" in tuned.stdout and "__launch_bounds__(256)" not in tuned.stdout
    host = run_plaitc(*CUDA_SCALE, "--emit", "cpp", "--cuda-threads", "1024")
    assert host.returncode == 0, host.stderr
    assert ", 1024, 65536), 1024, " in host.stdout  # grid_for(..., block, cap), then the block of the launch


@pytest.mark.parametrize("args,message", [
    (["--cuda-threads", "96"], "threads (per block) must be 64, 128, 256, 512 or 1024, not 96"),
    (["--cuda-threads", "2048"], "not 2048"),
    (["--cuda-threads", "12x"], "--cuda-threads takes a number, not '12x'"),
    (["--cuda-row-groups", "3"], "row_groups must be 1, 2, 4 or 8, not 3"),
    (["--cuda-max-team", "512"], "max_team must be a power of two from 32 to threads (256), not 512"),
    (["--cuda-max-team", "16", "--cuda-threads", "64"], "not 16"),
])
def test_bad_cuda_launch_options_exit_64(args, message):
    result = run_plaitc(*CUDA_SCALE, "--emit", "cu", *args)
    assert result.returncode == 64, result.stderr
    assert message in result.stderr


def test_cuda_launch_options_need_the_cuda_target():
    result = run_plaitc("compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--emit", "ir",
                        "--cuda-threads", "512")
    assert result.returncode == 64
    assert "are for --target cuda" in result.stderr


def test_shared_object_runs_and_uses_module_constant(tmp_path, cache_dir):
    library = build_so(tmp_path, cache_dir, "scale", "f64[::1], f64[::1]")
    x_buffer, x = contiguous_array([1.0, 2.0, -4.0, 0.5])
    y_buffer, y = contiguous_array([0.0] * 4)
    status, _, _ = call(library, [x, y])
    assert status == 0
    assert list(y_buffer) == [2.5, 5.0, -10.0, 1.25]


def test_shared_object_returns_scalar(tmp_path, cache_dir):
    library = build_so(tmp_path, cache_dir, "total", "f64[::1]")
    values = [float(i) for i in range(1000)]
    x_buffer, x = contiguous_array(values)
    status, results, _ = call(library, [x])
    assert status == 0
    assert results[0].is_array == 0
    assert results[0].f64 == pytest.approx(sum(values))


def test_disk_cache_is_filled_and_reused(tmp_path, cache_dir):
    build_so(tmp_path, cache_dir, "total", "f64[::1]")
    entries = [p for p in cache_dir.glob("*/*") if p.is_dir()]
    assert len(entries) == 1
    entry = entries[0]
    assert entry.name.startswith(entry.parent.name) and len(entry.name) == 64
    assert {"kernel.cpp", "kernel.so", "kernel.sha256", "build.log"} <= {p.name for p in entry.iterdir()}
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    mtime = (entry / "kernel.so").stat().st_mtime_ns
    build_so(tmp_path, cache_dir, "total", "f64[::1]")
    assert (entry / "kernel.so").stat().st_mtime_ns == mtime
    assert len([p for p in cache_dir.glob("*/*") if p.is_dir()]) == 1
    build_so(tmp_path, cache_dir, "total", "f64[::1]", "--fastmath")
    assert len([p for p in cache_dir.glob("*/*") if p.is_dir()]) == 2


def test_corrupted_cache_entry_is_rebuilt(tmp_path, cache_dir):
    build_so(tmp_path, cache_dir, "total", "f64[::1]")
    (library_in_cache,) = cache_dir.glob("*/*/kernel.so")
    data = bytearray(library_in_cache.read_bytes())
    data[len(data) // 2] ^= 0xFF
    library_in_cache.write_bytes(bytes(data))
    library = build_so(tmp_path, cache_dir, "total", "f64[::1]")
    x_buffer, x = contiguous_array([1.0, 2.0])
    status, results, _ = call(library, [x])
    assert status == 0 and results[0].f64 == 3.0


def test_no_cache_leaves_cache_untouched(tmp_path, cache_dir):
    library = build_so(tmp_path, cache_dir, "total", "f64[::1]", "--no-cache")
    assert not cache_dir.exists()
    x_buffer, x = contiguous_array([4.0, 5.0])
    status, results, _ = call(library, [x])
    assert status == 0 and results[0].f64 == 9.0


def test_dump_dir(tmp_path, cache_dir):
    dump = tmp_path / "dump"
    build_so(tmp_path, cache_dir, "scale", "f64[::1], f64[::1]", "--dump-dir", dump)
    names = sorted(p.name for p in dump.iterdir())
    assert "scale.cpp" in names
    assert "scale.00.lower_to_ir.ir" in names
    assert any(name.startswith("scale.01.") and name.endswith(".ir") for name in names)


def test_compile_error_exits_1_and_points_at_the_line(tmp_path):
    result = run_plaitc("compile", f"{KERNELS / 'undefined_name.py'}::broken", "--signature", "f64[::1]",
                        "--emit", "ir")
    assert result.returncode == 1
    assert "undefined_name.py" in result.stderr
    assert "line 6" in result.stderr
    assert "not_defined_anywhere" in result.stderr


def test_unknown_function_exits_1():
    result = run_plaitc("compile", f"{VECTOR_OPS}::no_such_kernel", "--signature", "f64", "--emit", "ir")
    assert result.returncode == 1
    assert "no_such_kernel" in result.stderr


def test_shared_cache_directory_is_refused_with_exit_2(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    result = run_plaitc("compile", f"{VECTOR_OPS}::total", "--signature", "f64[::1]", "-o", tmp_path / "out",
                        "--cache-dir", shared)
    assert result.returncode == 2
    assert str(shared) in result.stderr


def test_missing_compiler_exits_2(tmp_path, cache_dir):
    result = run_plaitc("compile", f"{VECTOR_OPS}::total", "--signature", "f64[::1]", "-o", tmp_path / "out",
                        "--cxx", "plait-no-such-compiler", env_extra={"PLAIT_CACHE_DIR": str(cache_dir)})
    assert result.returncode == 2
    assert "plait-no-such-compiler" in result.stderr


# Kernels whose generated text followed the order of heap addresses before the
# compiler's sets and maps of variables and arrays were ordered by creation
# (ir::InfoOrder): two reductions of one loop, the error counters of a
# parallel region, a row's extremes. glibc's malloc without its per-thread
# cache hands out addresses in another order; the text, which keys the disk
# cache, must not change.
CUDA_KERNELS = HERE.parent / "gpu" / "cuda_kernels.py"
HEAP_ORDER_CASES = [
    ("masked_means", "f64[::1], f64[::1], int", "cuda", "cu"),
    ("masked_means", "f64[::1], f64[::1], int", "cpu", "cpp"),
    ("jacobi_1d_slices", "int, f64[::1], f64[::1]", "cpu", "cpp"),
    ("row_int_extremes", "i32[:, ::1], i32[::1], i32[::1]", "cuda", "cu"),
    ("heat_3d_slices", "int, f64[:, :, ::1], f64[:, :, ::1]", "cpu", "cpp"),
]


@pytest.mark.parametrize("name,signature,target,emit", HEAP_ORDER_CASES)
def test_generated_text_does_not_depend_on_heap_addresses(name, signature, target, emit):
    outputs = [run_plaitc("compile", f"{CUDA_KERNELS}::{name}", "--signature", signature, "--target", target,
                          "--emit", emit, env_extra=extra)
               for extra in ({}, {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"})]
    assert outputs[0].returncode == 0, outputs[0].stderr
    assert outputs[0].stdout == outputs[1].stdout
