"""Generated device kernels run on the host, for the tests that check CUDA
code where no GPU is (test_cuda_batched.py, test_cuda_pairs.py,
test_cuda_row_groups.py): the device part's kernel compiles as C++ after a
prelude of stand-ins for CUDA's names (each test module has its own, for the
runtime functions its kernels call), a main loads copies of the arrays'
bases into static buffers, runs the module's launch (every thread in turn,
or each block's threads as std::threads), and writes the buffers back."""

import re
import subprocess

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


def run(tmp_path, prelude, kernel, copies, launch):
    """Builds prelude + kernel + a main that runs `launch` (C++ statements)
    over the buffers base0... holding `copies`; returns the buffers after it."""
    lines = []
    for k, b in enumerate(copies):
        b.tofile(tmp_path / f"base{k}.bin")
        lines.append(f"  alignas(64) static unsigned char base{k}[{max(b.nbytes, 1)}];")
        lines.append(f'  {{ FILE* f = fopen("{tmp_path}/base{k}.bin", "rb"); '
                     f"if (fread(base{k}, 1, {b.nbytes}, f) != {b.nbytes}) return 1; fclose(f); }}")
    source = CUDA_BUILTINS + prelude + kernel + "\nint main() {\n" + "\n".join(lines) + "\n" + launch + \
        "".join(f'  {{ FILE* f = fopen("{tmp_path}/base{k}.bin", "wb"); fwrite(base{k}, 1, {b.nbytes}, f); '
                f"fclose(f); }}\n" for k, b in enumerate(copies)) + "  return 0;\n}\n"
    (tmp_path / "emulated.cpp").write_text(source)
    headers = precompiled.header_dir("emulation_std.h", STANDARD_HEADERS, FLAGS)
    build = subprocess.run([precompiled.compiler(), *FLAGS, "-I", headers, "-include", "emulation_std.h", "-o",
                            str(tmp_path / "emulated"), str(tmp_path / "emulated.cpp")], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    ran = subprocess.run([str(tmp_path / "emulated")], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    return [np.fromfile(tmp_path / f"base{k}.bin", dtype=b.dtype).reshape(b.shape) for k, b in enumerate(copies)]
