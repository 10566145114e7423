"""Generated device kernels run on the host, for the tests that check CUDA
code where no GPU is (test_cuda_batched.py, test_cuda_pairs.py,
test_cuda_row_groups.py): the device part's kernel compiles as C++ after a
prelude of stand-ins for CUDA's names (each test module has its own, for the
runtime functions its kernels call), a main loads copies of the arrays'
bases into buffers, runs the module's launch (every thread in turn, or each
block's threads as std::threads), and writes the buffers back. The launch's
integers are read at run time, so the launches of one kernel over other
sizes and teams share one build."""

import atexit
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import numpy as np

import precompiled


def kernel_call(kernel, fn, loops, copies, views, scalars=(), team=None, version=""):
    """The name of the first kernel in the device text `kernel` (of the
    first whose name ends in `version`, such as "_rows") and the C++
    arguments of its call: `loops` gives the (begin, step, trip) of its
    parallel loop's levels, `views` the (base index, slice) of each array
    argument of `fn` in order, over the buffers base0... holding `copies`,
    `scalars` the leading scalar arguments, `team` the team size."""
    params = re.search(r"__launch_bounds__\(\d+\) (\w+" + version + r")\((.*)\) \{", kernel)
    arrays = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])[len(scalars):]
    scalar_names = fn.__code__.co_varnames[:len(scalars)]
    args, level = [], 0
    for param in params.group(2).split(", "):
        ptype, pname = param.rsplit(" ", 1)
        if pname.startswith(("p_begin", "p_step", "p_trip")):
            args.append(str(loops[level // 3][level % 3]))
            level += 1
        elif pname in ("p_team", "p_team_arg"):
            args.append(str(team))
        elif pname == "p_err":
            args.append("nullptr")
        elif pname.startswith("v_"):
            value = scalars[scalar_names.index(pname[2:])]
            args.append(repr(float(value)) if isinstance(value, (float, np.floating)) else repr(int(value)))
        else:
            m = re.fullmatch(r"a_(\w+)_(data|n\d|s\d)", pname)
            k, sl = views[arrays.index(m.group(1))]
            view = copies[k][sl]
            if m.group(2) == "data":
                offset = view.__array_interface__["data"][0] - copies[k].__array_interface__["data"][0]
                args.append(f"reinterpret_cast<{ptype}>(base{k} + {offset})")
            else:
                table = view.shape if m.group(2)[0] == "n" else [st // view.itemsize for st in view.strides]
                args.append(str(table[int(m.group(2)[1:])]))
    return params.group(1), args


def threads_in_turn(blocks, name, args):
    """A launch of `blocks` blocks of 256 threads, every thread in turn (one
    schedule the GPU may take when no thread waits for another)."""
    return f"""  gridDim.x = {blocks};
  for (unsigned b = 0; b < {blocks}; ++b)
    for (unsigned t = 0; t < 256; ++t) {{
      blockIdx.x = b;
      threadIdx.x = t;
      {name}({", ".join(args)});
    }}
"""


# CUDA's integer intrinsics that every kernel may call (the team's shift).
CUDA_BUILTINS = "static inline int __ffs(int x) { return __builtin_ffs(x); }\n"


# Every emulated program is built with these flags (-pthread: the modules
# whose launch runs blocks as std::threads), with the standard headers that
# the preludes include precompiled.
FLAGS = ("-std=c++20", "-O1", "-fwrapv", "-w", "-pthread")
STANDARD_HEADERS = ("algorithm", "barrier", "cmath", "cstdint", "cstdio", "cstdlib", "cstring", "limits", "memory",
                    "thread", "vector")


# An integer literal of the launch (a shape, a stride, an offset, a team
# size, a block count), never part of a longer token or of a float.
_INTEGER = re.compile(r"(?<![\w.])(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)(?![\w.])")


def _lift_integers(launch):
    """`launch` with its integer literals read from the program's parameter
    array P instead, and their values: launches of one kernel that differ in
    sizes, teams and offsets only are then one program, built once."""
    values = []

    def lift(m):
        if not m.group(1).isdigit():
            return m.group(1)
        values.append(int(m.group(1)))
        return f"P[{len(values) - 1}]"

    return _INTEGER.sub(lift, launch), values


_PRIVATE = []  # this process's own directory, where no PLAIT_CACHE_DIR is set


def _programs_dir():
    """Where built programs are kept: under the run's PLAIT_CACHE_DIR (which
    tests/conftest.py makes, private to the run, for every test process), else
    in a directory of this process's own (never a shared one: its programs
    are run)."""
    if os.environ.get("PLAIT_CACHE_DIR"):
        where = pathlib.Path(os.environ["PLAIT_CACHE_DIR"]) / "emulated-programs"
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
        return where
    if not _PRIVATE:
        _PRIVATE.append(pathlib.Path(tempfile.mkdtemp(prefix="plait-emulated-")))
        atexit.register(shutil.rmtree, _PRIVATE[0], True)
    return _PRIVATE[0]


def _program(source):
    """The built program of `source`, from the kept programs or built into
    them; a new build lands by an atomic rename, so test processes that
    build the same program at once each find a whole one."""
    flags = [precompiled.compiler(), *FLAGS]
    key = hashlib.sha256("\0".join(flags + [source]).encode()).hexdigest()[:32]
    where = _programs_dir()
    program = where / key
    if program.exists():
        return program
    headers = precompiled.header_dir("emulation_std.h", STANDARD_HEADERS, FLAGS)
    with tempfile.TemporaryDirectory(dir=where) as staging:
        cpp = pathlib.Path(staging) / "emulated.cpp"
        cpp.write_text(source)
        build = subprocess.run([*flags, "-I", headers, "-include", "emulation_std.h", "-o", str(cpp.with_suffix("")),
                                str(cpp)], capture_output=True, text=True)
        assert build.returncode == 0, build.stderr
        os.replace(cpp.with_suffix(""), program)
    return program


def run(tmp_path, prelude, kernel, copies, launch):
    """Builds prelude + kernel + a main that runs `launch` (C++ statements)
    over the buffers base0... holding `copies`; returns the buffers after it.
    The launch's integers and the buffers' sizes are the program's
    parameters, read at run time: the program depends on the kernel and the
    launch's form only."""
    launch, values = _lift_integers(launch)
    lines = [f"  P.resize({len(values) + len(copies)});",
             "  { FILE* f = fopen((std::string(argv[1]) + \"/params.bin\").c_str(), \"rb\"); "
             "if (fread(P.data(), sizeof(int64_t), P.size(), f) != P.size()) return 1; fclose(f); }"]
    for k, b in enumerate(copies):
        b.tofile(tmp_path / f"base{k}.bin")
        size = f"P[{len(values) + k}]"
        lines.append(f"  unsigned char* const base{k} = static_cast<unsigned char*>("
                     f"std::aligned_alloc(64, ({size} + 64) / 64 * 64));")
        lines.append(f"  {{ FILE* f = fopen((std::string(argv[1]) + \"/base{k}.bin\").c_str(), \"rb\"); "
                     f"if (fread(base{k}, 1, {size}, f) != (size_t){size}) return 1; fclose(f); }}")
    source = CUDA_BUILTINS + prelude + kernel + "\n#include <string>\nstatic std::vector<int64_t> P;\n" + \
        "int main(int, char** argv) {\n" + "\n".join(lines) + "\n" + launch + \
        "".join(f"  {{ FILE* f = fopen((std::string(argv[1]) + \"/base{k}.bin\").c_str(), \"wb\"); "
                f"fwrite(base{k}, 1, P[{len(values) + k}], f); fclose(f); }}\n" for k in range(len(copies))) + \
        "  return 0;\n}\n"
    np.array(values + [b.nbytes for b in copies], dtype=np.int64).tofile(tmp_path / "params.bin")
    ran = subprocess.run([str(_program(source)), str(tmp_path)], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    return [np.fromfile(tmp_path / f"base{k}.bin", dtype=b.dtype).reshape(b.shape) for k, b in enumerate(copies)]
