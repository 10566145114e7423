"""A grammar of random well-typed Plait kernels, drawn with Hypothesis.

`kernel_cases()` is a strategy of `KernelCase`: the source of one kernel
function `kernel(...)`, and the arguments to call it with (array extents,
dtypes, layouts, value ranges and scalars). The generator knows every extent
it will pass, so its indices are in range by construction (or deliberately
one past the end, for `boundscheck=True`), and it tracks a bound on every
integer value, so that Python's unbounded ints never leave the int64 range
that kernels compute in (the one documented difference). Types follow NumPy
2's promotion (NEP 50); a local keeps one type: every assignment to it has
exactly that type.

Parallel and simd loops are race-free by construction: an iteration writes
only the elements of its own index in arrays that the loop does not read
otherwise, its scalars are private (assigned first in the body) or
reductions (`s += e`, read nowhere else in the loop). A float reduction in
such a loop, and `np.sum`/`@` of floats, are exact only up to reassociation:
their values are returned and never read again, and the case is marked
`approx`.

Kernels may raise: integer or Python-float division by zero, math domain
errors, `int()` of NaN, `np.max` of an empty array, NumPy 2's OverflowError
for a Python int that does not fit a narrower type, and (with
`boundscheck=True`) an index one past the end. `while` loops count with a
counter incremented first in their body, so no value that might come from an
error decides when a loop ends.
"""

import math

import hypothesis.strategies as st
import numpy as np

from random_expressions import (DTYPE, MODULUS, STRONG, STRONG_OF, TYPE_MAX, WEAK, Array, Expressions, KernelCase, Loop,
                                Var, kind)


class Generator(Expressions):
    # -- statements -------------------------------------------------------------
    def assignable(self):
        """Locals a statement here may assign: in a parallel or simd loop only
        its private ones (declared in its body)."""
        first = self.private_from if self.in_parallel() else 0
        return [v for scope in self.scopes[first:] for v in scope if not (v.approx or v.final or v.fixed)]

    def block(self, depth, leaf_only=False):
        self.scopes.append([])
        emitted = len(self.lines)
        for _ in range(self.draw(st.integers(1, 3))):
            self.statement(depth, leaf_only)
        if len(self.lines) == emitted:
            self.emit("pass")
        self.scopes.pop()

    def statement(self, depth, leaf_only=False):
        options = ["declare", "declare", "assign", "store", "store", "store"]
        if self.reductions:
            options += ["reduce", "reduce"]
        if depth < 3:
            options += ["if"]
            if not leaf_only:
                options += ["for", "for", "while"]
        if not self.in_parallel() and any(lp.var for lp in self.loops) and self.chance(0.2):
            options += ["jump"]
        getattr(self, "s_" + self.choice(options))(depth)

    def assigned_value(self, var):
        text, bound = self.expr(var.type)
        if bound > var.bound:
            if var.type != "int":
                return self.l_literal(var.type)[0]
            return f"({text}) % {MODULUS}"
        return text

    def s_declare(self, depth):
        t = self.choice(list(WEAK + STRONG))
        var = Var(self.fresh("v"), t, {"int": 2**20, "bool": 1, "b1": 1}.get(t, TYPE_MAX.get(t, math.inf)))
        self.emit(f"{var.name} = {self.assigned_value(var)}")
        self.scopes[-1].append(var)

    def s_assign(self, depth):
        targets = self.assignable()
        if not targets:
            return self.s_declare(depth)
        var = self.choice(targets)
        if kind(var.type) != "b" and self.chance(0.5):
            op = self.choice(["+", "-", "*"] if kind(var.type) == "f" else ["+", "-"])
            value, bound = self.expr(var.type, 1)
            if var.type == "int":
                self.emit(f"{var.name} = ({var.name} {op} {value}) % {MODULUS}")
            else:
                self.emit(f"{var.name} {op}= {value}")
            return
        self.emit(f"{var.name} = {self.assigned_value(var)}")

    def stored_type(self, array):
        return self.choice({"b": ["bool", "b1"], "i": [array.type, "int"],
                            "f": [array.type, "float", "int", "f64", "i32"]}[kind(array.type)])

    def s_store(self, depth):
        owned = [a for a in self.arrays if a.name in self.writing] if self.in_parallel() else self.arrays
        if not owned:
            return self.s_declare(depth)
        array = self.choice(owned)
        index = self.index_of(array)
        if self.in_parallel():
            tail = self.index_of(array, 1) if len(array.shape) > 1 else ""
            if tail is None:
                return
            index = ", ".join([self.owner.var] + ([tail] if tail else []))
        if index is None:
            return
        value, _ = self.expr(self.stored_type(array))
        if kind(array.type) != "b" and self.chance(0.25):
            self.emit(f"{array.name}[{index}] {self.choice(['+', '-', '*'])}= {value}")
        else:
            self.emit(f"{array.name}[{index}] = {value}")

    def s_reduce(self, depth):
        var, op = self.choice(self.reductions)
        value, _ = self.expr(var.type)
        if op == "+":
            self.emit(f"{var.name} {self.choice(['+=', '-='])} {value}")
        else:
            self.emit(f"{var.name} = {op}({var.name}, {value})")

    def s_jump(self, depth):
        cond, _ = self.expr("bool", 2)
        self.emit(f"if {cond}:")
        self.indent += 1
        self.emit(self.choice(["break", "continue"]))
        self.indent -= 1

    def s_if(self, depth):
        cond, _ = self.expr(self.choice(["bool", "bool", "b1"]))
        self.emit(f"if {cond}:")
        self.indent += 1
        self.block(depth + 1, self.leaf_only)
        self.indent -= 1
        for _ in range(self.draw(st.integers(0, 1))):
            cond, _ = self.expr("bool")
            self.emit(f"elif {cond}:")
            self.indent += 1
            self.block(depth + 1, self.leaf_only)
            self.indent -= 1
        if self.chance(0.5):
            self.emit("else:")
            self.indent += 1
            self.block(depth + 1, self.leaf_only)
            self.indent -= 1

    def range_header(self):
        """(range text, extent): the loop variable stays in [0, extent)."""
        # Only parameters never assigned: the extent is their value.
        fixed = {v.name for v in self.scopes[0] if v.fixed}
        ints = [s for s in self.scalars if s[0] in fixed]
        if ints and self.chance(0.15):
            name, _, value = self.choice(ints)
            return f"range({name})", max(value, 0)
        array = self.choice(self.arrays)
        axis = self.draw(st.integers(0, len(array.shape) - 1))
        extent = f"{array.name}.shape[{axis}]"
        form = self.choice([f"range({extent})"] * 3 + [f"range(1, {extent})", f"range({extent} - 1, -1, -1)",
                                                       f"range(0, {extent}, 2)"])
        return form, array.shape[axis]

    def s_for(self, depth):
        header, extent = self.range_header()
        var = self.fresh("i")
        loop = Loop(var, extent)
        outer_parallel = self.in_parallel()
        pragma = None
        if not outer_parallel and self.chance(0.4):
            pragma = self.choice(["parallel for", "parallel for", "simd", "parallel for simd"])
        elif outer_parallel and not self.leaf_only and self.chance(0.3):
            pragma = "simd"
        saved = (self.writing, self.reductions, self.leaf_only, getattr(self, "owner", None),
                 getattr(self, "private_from", 0))
        if pragma and not outer_parallel:
            owned = [a for a in self.arrays if a.shape[0] >= extent and a.output] if "parallel" in pragma else []
            if pragma == "simd" or not owned:
                owned = [a for a in self.arrays if a.output and a.shape[0] >= extent]
            self.writing = {a.name for a in owned if self.chance(0.7)}
            self.owner = loop
            self.reductions = self.declare_reductions()
            clause = self.reduction_clause()
            self.emit(f"#pragma {pragma}{clause}")
            loop.parallel = True
            self.private_from = len(self.scopes)
            self.leaf_only = "simd" in pragma
        elif pragma == "simd":
            self.emit("#pragma simd")
            self.leaf_only = True
            # Its iterations may assign only locals of its own body, and no
            # array element: the elements the parallel loop's iteration owns
            # are indexed by its variable, not this loop's, so every
            # iteration here would update the same one (a race the pragma
            # rules out).
            self.private_from = len(self.scopes)
            self.writing = set()
        self.emit(f"for {var} in {header}:")
        self.loops.append(loop)
        self.indent += 1
        self.block(depth + 1, self.leaf_only)
        self.indent -= 1
        self.loops.pop()
        finished = self.reductions if loop.parallel else []
        self.writing, self.reductions, self.leaf_only, self.owner, self.private_from = saved
        for var_, op in finished:
            var_.final = True
            var_.approx = op == "+" and kind(var_.type) == "f"
            self.approx = self.approx or var_.approx
            if len(self.scopes) == 1:  # defined on every path to the return
                self.results.append(var_)

    def s_collapsed(self):
        """Two perfectly nested parallel loops (one collapsed iteration
        space): each (i, j) writes only out[i, j]."""
        targets = [a for a in self.arrays if a.output and len(a.shape) == 2]
        if not targets:
            return
        target = self.choice(targets)
        saved = (self.writing, self.owner, self.private_from)
        outer, inner = Loop(self.fresh("i"), target.shape[0], parallel=True), Loop(self.fresh("j"), target.shape[1])
        self.writing, self.owner = {target.name}, outer
        for axis, loop in enumerate((outer, inner)):
            self.emit(f"#pragma {self.choice(['parallel for', 'parallel'])}")
            self.emit(f"for {loop.var} in range({target.name}.shape[{axis}]):")
            self.indent += 1
            self.loops.append(loop)
        self.scopes.append([])
        self.private_from = len(self.scopes) - 1
        for _ in range(self.draw(st.integers(0, 2))):
            self.s_declare(2)
        value, _ = self.expr(self.stored_type(target))
        self.emit(f"{target.name}[{outer.var}, {inner.var}] = {value}")
        self.scopes.pop()
        self.loops[-2:] = []
        self.indent -= 2
        self.writing, self.owner, self.private_from = saved

    def declare_reductions(self):
        found = []
        for _ in range(self.draw(st.integers(0, 2))):
            t = self.choice(["float", "f64", "f32", "i64", "int", "f64"])
            var = Var(self.fresh("s"), t, math.inf, final=True)
            init, _ = self.l_literal(t)
            self.emit(f"{var.name} = {init}")
            found.append((var, self.choice(["+", "+", "max", "min"])))
        return found

    def reduction_clause(self):
        named = [(v, op) for v, op in self.reductions if self.chance(0.4)]
        if not named:
            return ""
        return " " + " ".join(f"reduction({op}: {v.name})" for v, op in named)

    def s_while(self, depth):
        counter = self.fresh("k")
        if self.chance(0.5) or not self.arrays:
            limit = self.draw(st.integers(0, 4))
            limit_text = str(limit)
        else:
            array = self.choice(self.arrays)
            axis = self.draw(st.integers(0, len(array.shape) - 1))
            limit, limit_text = array.shape[axis], f"{array.name}.shape[{axis}]"
        self.emit(f"{counter} = 0")
        self.emit(f"while {counter} < {limit_text}:")
        self.indent += 1
        self.emit(f"{counter} += 1")
        self.loops.append(Loop(f"({counter} - 1)", limit))
        self.block(depth + 1, self.leaf_only)
        self.loops.pop()
        self.indent -= 1

    # -- array statements (outside loops) ---------------------------------------
    def array_operand(self, target):
        """An array expression with `target`'s shape, from inputs of that
        shape, broadcast rows, transposes and scalars."""
        shape = target.shape
        options = []
        for a in self.inputs():
            if a.shape == shape:
                options.append(a.name)
                if len(shape) == 1 and shape[0] > 0:
                    options.append(f"{a.name}[::-1]")
            if len(shape) == 2 and a.shape == shape[::-1]:
                options.append(f"{a.name}.T")
            if len(shape) == 2 and a.shape == shape[1:]:
                options.append(f"{a.name}[None, :]")
        if not options or self.chance(0.15):
            return self.expr(self.choice(["int", "float"]), 2)[0]
        return self.choice(options)

    def array_expr(self, target, depth=0):
        if depth >= 2 or self.chance(0.3):
            return self.array_operand(target)
        x, y = self.array_expr(target, depth + 1), self.array_expr(target, depth + 1)
        form = self.choice(["arith", "arith", "ufunc", "binary", "where"])
        if form == "arith":
            return f"({x} {self.choice(['+', '-', '*'])} {y})"
        if form == "ufunc":
            return f"np.{self.choice(['abs', 'sqrt', 'floor', 'negative', 'exp', 'sin'])}({x})"
        if form == "binary":
            return f"np.{self.choice(['maximum', 'minimum'])}({x}, {y})"
        z = self.array_expr(target, depth + 1)
        return f"np.where({x} > {y}, {x}, {z})"

    def s_array(self):
        target = self.choice([a for a in self.arrays if a.output])
        rhs = self.array_expr(target)
        dtype = self.dtype_of(rhs)
        if dtype is None or not np.can_cast(dtype, DTYPE[target.type], "same_kind"):
            return
        if any(f"np.{fn}(" in rhs for fn in ("exp", "sin")):
            self.approx = True  # NumPy's SIMD ufuncs differ by ulps (docs/language.md)
        lhs = "[:]" if len(target.shape) == 1 else self.choice(["[:, :]", "[:]"])
        self.emit(f"{target.name}{lhs} = {rhs}")

    def s_matmul(self):
        floats = [a for a in self.inputs() if kind(a.type) == "f" and len(a.shape) == 2]
        for a in floats:
            for b in self.inputs():
                if kind(b.type) != "f" or b.shape[0] != a.shape[1]:
                    continue
                shape = (a.shape[0],) + b.shape[1:]
                out = [o for o in self.arrays if o.output and o.shape == shape and kind(o.type) == "f"
                       and np.can_cast(np.result_type(DTYPE[a.type], DTYPE[b.type]), DTYPE[o.type], "same_kind")]
                if out:
                    self.approx = True
                    self.emit(f"{self.choice(out).name}[:] = {a.name} @ {b.name}")
                    return

    def dtype_of(self, rhs):
        """NumPy's result dtype of an array expression, evaluated on zeros of
        the parameters' shapes and on the locals' types."""
        env = {"np": np, "math": math}
        for a in self.arrays:
            env[a.name] = np.zeros(a.shape, DTYPE[a.type])
        samples = {"int": 1, "float": 1.0, "bool": True}
        for scope in self.scopes:
            for v in scope:
                env[v.name] = samples[v.type] if v.type in samples else DTYPE[v.type](1)
        for lp in self.loops:
            env[lp.var] = 0
        try:
            with np.errstate(all="ignore"):
                value = eval(rhs, env)
        except Exception:
            return None
        dtype = np.asarray(value).dtype
        return dtype if dtype in STRONG_OF else None

    def reduction_result(self):
        arrays = [a for a in self.inputs() if kind(a.type) != "b"]
        if not arrays:
            return None
        a = self.choice(arrays)
        fn = self.choice(["sum", "max", "min"])
        axis = f", axis={self.draw(st.integers(0, len(a.shape) - 1))}" if self.chance(0.3) else ""
        if fn == "sum" and kind(a.type) == "f":
            self.approx = True
        return f"np.{fn}({a.name}{axis})"

    # -- the kernel ---------------------------------------------------------------
    def kernel(self):
        self.make_params()
        for _ in range(self.draw(st.integers(1, 4))):
            form = self.choice(["statement"] * 6 + ["array", "matmul", "collapsed"])
            if form == "statement":
                self.statement(0)
            else:
                getattr(self, "s_" + form)()
        returned = [v.name for v in self.results]
        for _ in range(self.draw(st.integers(0, 2))):
            if self.chance(0.3):
                reduction = self.reduction_result()
                if reduction:
                    returned.append(reduction)
            else:
                returned.append(self.expr(self.choice(list(WEAK + STRONG)))[0])
        if self.chance(0.2):
            returned.append(self.choice([a for a in self.arrays if a.output]).name)
        if returned:
            self.emit("return " + ", ".join(returned))
        elif not self.lines:
            self.emit("pass")
        params = [a for a in self.arrays] + self.scalars
        names = ", ".join(p.name if isinstance(p, Array) else p[0] for p in params)
        header = "import math\n\nimport numpy as np\n\n\ndef kernel(" + names + "):\n"
        return header + "\n".join(self.lines) + "\n", params


@st.composite
def kernel_cases(draw, boundscheck=None, out_of_range=None):
    """A KernelCase; `boundscheck`: None draws it, else fixed. `out_of_range`
    (by default the same as `boundscheck`, which it requires): whether an
    index may be drawn one past the end."""
    if boundscheck is None:
        boundscheck = draw(st.booleans())
    if out_of_range is None:
        out_of_range = boundscheck
    assert boundscheck or not out_of_range, "an index out of range needs boundscheck=True"
    generator = Generator(draw, boundscheck, out_of_range)
    source, params = generator.kernel()
    return KernelCase(source, params, boundscheck, generator.approx, draw(st.integers(0, 2**32 - 1)))
