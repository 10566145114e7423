"""Types, values and expressions of the random kernels of
tests/python/random_kernels.py (the statements and the kernel are there).

Types are the weak Python scalars `bool`, `int`, `float` and the strong
NumPy ones `b1`, `i32`, `i64`, `f32`, `f64` (NEP 50). An expression is drawn
for the type it must have, so every local keeps one type. Every expression
comes with a bound on its magnitude (math.inf when unknown): a Python int
never leaves the int64 range kernels compute in, the one documented
difference from Python.
"""

import math
from dataclasses import dataclass

import hypothesis.strategies as st
import numpy as np

WEAK = ("bool", "int", "float")
STRONG = ("b1", "i32", "i64", "f32", "f64")
NP_NAME = {"b1": "np.bool_", "i32": "np.int32", "i64": "np.int64", "f32": "np.float32", "f64": "np.float64"}
DTYPE = {"b1": np.bool_, "i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64}
STRONG_OF = {np.dtype(d): t for t, d in DTYPE.items()}
TYPE_MAX = {"i32": 2**31, "i64": 2**63, "int": 2**62, "b1": 1, "bool": 1}
# Weak ints stay below this, so that sums and products never leave int64.
INT_LIMIT = 2**40
MODULUS = 1009


def kind(t):
    return {"bool": "b", "b1": "b", "int": "i", "i32": "i", "i64": "i"}.get(t, "f")


@dataclass
class Var:
    name: str
    type: str
    bound: float  # |value| <= bound; math.inf when unknown
    approx: bool = False  # a reassociated float reduction
    final: bool = False  # a reduction: read nowhere, returned at the end
    fixed: bool = False  # a parameter that loop bounds may read: never assigned


@dataclass
class Array:
    name: str
    type: str
    shape: tuple
    layout: str
    low: int = -100
    high: int = 100
    output: bool = False  # poisoned before the call; written by the kernel

    @property
    def bound(self):
        if self.output:
            return TYPE_MAX.get(self.type, math.inf)
        return {"b": 1, "i": max(abs(self.low), abs(self.high)), "f": 1.0}[kind(self.type)]


@dataclass
class Loop:
    var: str
    extent: int  # the loop variable takes values in [0, extent): it indexes axes at least as long
    parallel: bool = False


@dataclass
class KernelCase:
    source: str
    params: list  # Array or (name, type, value) for scalars
    boundscheck: bool
    approx: bool
    seed: int

    def arguments(self):
        """Fresh arguments: arrays of the case's dtypes, layouts and values
        (outputs poisoned), scalars as drawn."""
        from oracle import make, poisoned

        rng = np.random.default_rng(self.seed)
        args = []
        for p in self.params:
            if isinstance(p, Array):
                dtype = DTYPE[p.type]
                if p.output:
                    args.append(poisoned(p.shape, dtype, p.layout))
                else:
                    args.append(make(rng, dtype, p.shape, p.layout, low=p.low if kind(p.type) == "i" else None,
                                     high=p.high if kind(p.type) == "i" else None))
            else:
                args.append(p[2])
        return args

    def __repr__(self):
        return (f"KernelCase(boundscheck={self.boundscheck}, seed={self.seed}):\n"
                f"{self.source}{self.describe_arguments()}")

    def _repr_pretty_(self, printer, cycle):
        # What Hypothesis prints for a failing case: the kernel as written,
        # not its fields.
        printer.text(repr(self))

    def describe_arguments(self):
        lines = []
        for p in self.params:
            if isinstance(p, Array):
                values = {"i": f"values in [{p.low}, {p.high})", "f": "values in [-1, 1)", "b": "random bools"}
                role = "output, poisoned" if p.output else values[kind(p.type)]
                lines.append(f"  {p.name}: {np.dtype(DTYPE[p.type]).name}{list(p.shape)} {p.layout} ({role})")
            else:
                lines.append(f"  {p[0]} = {p[2]!r}")
        return "\n".join(lines)


class Expressions:
    def __init__(self, draw, boundscheck, out_of_range):
        self.draw = draw
        self.boundscheck = boundscheck
        self.out_of_range = out_of_range
        self.lines = []
        self.indent = 1
        self.names = 0
        self.scopes = [[]]  # scalar locals visible, innermost last
        self.loops = []
        self.arrays = []
        self.scalars = []
        self.approx = False
        self.writing = set()  # arrays written by the enclosing parallel/simd loop
        self.owner = None  # the parallel/simd loop whose variable indexes its writes
        self.private_from = 0  # the scopes of the locals that loop may assign
        self.reductions = []  # (local, op) of that loop
        self.leaf_only = False  # in a simd loop: no nested loops
        self.results = []  # reductions, returned at the end

    # -- drawing helpers --------------------------------------------------
    def choice(self, options):
        return self.draw(st.sampled_from(options))

    def chance(self, p):
        return self.draw(st.integers(0, 999)) < p * 1000

    def fresh(self, prefix):
        self.names += 1
        return f"{prefix}{self.names}"

    def emit(self, text):
        self.lines.append("    " * self.indent + text)

    def in_parallel(self):
        return any(loop.parallel for loop in self.loops)

    def variables(self, t=None):
        found = [v for scope in self.scopes for v in scope if not v.final]
        return [v for v in found if t is None or v.type == t]

    def inputs(self, t=None):
        return [a for a in self.arrays if not a.output and (t is None or a.type == t)]

    def readable(self, t=None):
        """Arrays an expression may read here: inputs, and outputs not
        written by an enclosing parallel or simd loop."""
        return [a for a in self.arrays if a.name not in self.writing and (t is None or a.type == t)]

    # -- parameters ---------------------------------------------------------
    def make_params(self):
        extents = [self.draw(st.integers(0, 9)) for _ in range(3)]
        for _ in range(self.draw(st.integers(1, 3))):
            self.new_array(extents, output=False)
        for _ in range(self.draw(st.integers(1, 2))):
            self.new_array(extents, output=True)
        for _ in range(self.draw(st.integers(0, 3))):
            t = self.choice(["int", "int", "float", "bool", "f32", "i32"])
            name = self.fresh("n" if kind(t) == "i" else "x" if kind(t) == "f" else "flag")
            if t == "int":
                value = self.draw(st.integers(-3, 9))
            elif t == "i32":
                value = np.int32(self.draw(st.integers(-3, 9)))
            elif t == "float":
                value = self.draw(st.sampled_from([0.0, 0.5, -1.5, 2.0, 3.25, -0.0, 1e300]))
            elif t == "f32":
                value = np.float32(self.draw(st.sampled_from([0.0, 0.5, -1.5, 2.0])))
            else:
                value = self.draw(st.booleans())
            bound = abs(value) if kind(t) != "b" else 1
            self.scalars.append((name, t, value))
            fixed = t == "int" and self.chance(0.5)
            self.scopes[0].append(Var(name, t, float(bound) if kind(t) == "f" else int(bound), fixed=fixed))

    def new_array(self, extents, output):
        ndim = self.draw(st.integers(1, 2))
        shape = tuple(self.choice(extents) for _ in range(ndim))
        layouts = ("C", "strided", "reversed") if ndim == 1 else ("C", "F", "strided", "reversed", "transposed")
        t = self.choice(STRONG)
        array = Array(self.fresh("out" if output else "a"), t, shape, self.choice(layouts), output=output)
        if not output and kind(t) == "i" and self.chance(0.3):
            array.low, array.high = -2, 3
        self.arrays.append(array)
        return array

    # -- expressions ----------------------------------------------------------
    def expr(self, t, depth=0):
        """(source, bound) of an expression of type `t`."""
        if depth >= 3 or self.chance(0.3):
            return self.leaf(t)
        k = kind(t)
        options = ["leaf", "convert", "ternary"]
        if k != "b":
            options += ["arith", "arith", "arith", "minmax", "abs", "call"]
            if k == "i":
                options += ["divmod", "divmod"]
            else:
                options += ["truediv", "divmod", "pow"]
        else:
            options += ["compare", "compare", "logic", "not", "isnan"]
        return getattr(self, "e_" + self.choice(options))(t, depth + 1)

    def leaf(self, t):
        options = ["literal"]
        if self.variables(t):
            options += ["var", "var"]
        if self.readable(t):
            options += ["element", "element"]
        if kind(t) == "i" and t != "i32":
            options += ["loopvar", "shape"] if self.loops else ["shape"]
        if t in STRONG and t != "b1" and self.inputs(t) and self.chance(0.1):
            options.append("extreme")
        return getattr(self, "l_" + self.choice(options))(t)

    def l_literal(self, t):
        k = kind(t)
        if k == "b":
            value = self.choice(["True", "False"])
            return (value if t == "bool" else f"np.bool_({value})"), 1
        if k == "i":
            value = self.draw(st.integers(-5, 12))
            text = str(value) if t == "int" else f"{NP_NAME[t]}({value})"
            return text, abs(value)
        value = self.choice([0.5, 1.5, -2.0, 3.0, 0.25, 1e-3, 100.0])
        return (repr(value) if t == "float" else f"{NP_NAME[t]}({value!r})"), abs(value)

    def l_var(self, t):
        v = self.choice(self.variables(t))
        return v.name, v.bound

    def l_element(self, t):
        array = self.choice(self.readable(t))
        index = self.index_of(array)
        if index is None:
            return self.l_literal(t)
        return f"{array.name}[{index}]", array.bound

    def l_loopvar(self, t):
        loop = self.choice(self.loops)
        return (loop.var if t == "int" else f"{NP_NAME[t]}({loop.var})"), loop.extent

    def l_shape(self, t):
        array = self.choice(self.arrays)
        axis = self.draw(st.integers(0, len(array.shape) - 1))
        text = f"{array.name}.shape[{axis}]" if self.chance(0.7) or axis else f"len({array.name})"
        return (text if t == "int" else f"{NP_NAME[t]}({text})"), array.shape[axis]

    def l_extreme(self, t):
        array = self.choice(self.inputs(t))
        return f"np.{self.choice(['max', 'min'])}({array.name})", array.bound

    def index_of(self, array, first_axis=0):
        """An index tuple for `array`'s axes from `first_axis` on, in range (or
        one past the end when `out_of_range`), or None when an extent is 0 and
        no loop proves the element exists."""
        parts = []
        for axis, extent in enumerate(array.shape[first_axis:], first_axis):
            direct = [lp for lp in self.loops if lp.extent <= extent]
            options = []
            if direct:
                options += ["loop", "loop", "loop", "reversed", "minus1"]
            if extent > 0:
                options += ["const", "modulo"]
            elif direct:
                options += ["modulo"]
            if not options:
                return None
            if self.out_of_range and self.chance(0.05):
                parts.append(f"{array.name}.shape[{axis}]" if self.chance(0.5) else str(extent))
                continue
            how = self.choice(options)
            if how == "loop":
                parts.append(self.choice(direct).var)
            elif how == "reversed":
                parts.append(f"{array.name}.shape[{axis}] - 1 - {self.choice(direct).var}")
            elif how == "minus1":
                parts.append(f"{self.choice(direct).var} - 1")
            elif how == "const":
                parts.append(str(self.draw(st.integers(-extent, extent - 1))))
            else:
                text, _ = self.expr(self.choice(["int", "int", "i64"]), 2)
                parts.append(f"({text}) % {array.name}.shape[{axis}]")
        return ", ".join(parts)

    def operand_types(self, t):
        """Pairs of operand types whose arithmetic gives `t`."""
        pairs = {"int": [("int", "int")],
                 "float": [("float", "float"), ("float", "int"), ("int", "float")],
                 "i32": [("i32", "i32"), ("i32", "int"), ("int", "i32")],
                 "i64": [("i64", "i64"), ("i64", "int"), ("i32", "i64")],
                 "f32": [("f32", "f32"), ("f32", "float"), ("int", "f32")],
                 "f64": [("f64", "f64"), ("f64", "float"), ("i64", "float"), ("f32", "f64"), ("i32", "f32")]}
        return pairs[t]

    def e_leaf(self, t, depth):
        return self.leaf(t)

    def e_arith(self, t, depth):
        a, b = self.choice(self.operand_types(t))
        (x, bx), (y, by) = self.expr(a, depth), self.expr(b, depth)
        op = self.choice(["+", "-", "*"])
        bound = bx * by if op == "*" else bx + by
        if kind(t) == "i" and bound >= INT_LIMIT:
            op, bound = "-", bx + by
        return f"({x} {op} {y})", min(bound, TYPE_MAX.get(t, math.inf))

    def divisor(self, t, depth):
        """A divisor that is zero only sometimes."""
        text, bound = self.expr(t, depth)
        if self.chance(0.5):
            one = "1" if kind(t) == "i" else "0.5"
            return f"(abs({text}) + {one})", bound + 1, 1 if kind(t) == "i" else 0.5
        return text, bound, 0

    def e_divmod(self, t, depth):
        a, b = self.choice(self.operand_types(t))
        x, bx = self.expr(a, depth)
        y, by, least = self.divisor(b, depth)
        op = self.choice(["//", "%"])
        if kind(t) == "i":
            bound = bx if op == "//" else by
        else:
            bound = (bx / least + 1 if least else math.inf) if op == "//" else by
        return f"({x} {op} {y})", min(bound, TYPE_MAX.get(t, math.inf))

    def e_truediv(self, t, depth):
        pairs = [p for p in self.operand_types(t)] + ([("int", "int")] if t == "float" else [])
        a, b = self.choice(pairs)
        x, bx = self.expr(a, depth)
        y, by, least = self.divisor(b, depth)
        return f"({x} / {y})", (bx / least if least else math.inf)

    def e_pow(self, t, depth):
        x, bx = self.expr(t, depth)
        power = self.draw(st.integers(0, 3))
        if self.chance(0.2):
            # A Python float's negative base to a fractional power is a
            # complex number (not in the language): the base is abs().
            y, _ = self.expr(t, depth)
            return (f"(abs({x}) ** {y})" if t == "float" else f"({x} ** {y})"), math.inf
        exponent = f"{power}.0" if self.chance(0.5) else str(power)
        return f"({x} ** {exponent})", (bx**power if bx < 1e50 else math.inf)

    def e_minmax(self, t, depth):
        (x, bx), (y, by) = self.expr(t, depth), self.expr(t, depth)
        if t in STRONG and self.chance(0.3):
            return f"np.{self.choice(['minimum', 'maximum'])}({x}, {y})", max(bx, by)
        return f"{self.choice(['min', 'max'])}({x}, {y})", max(bx, by)

    def e_abs(self, t, depth):
        x, bx = self.expr(t, depth)
        return f"abs({x})", bx

    def e_ternary(self, t, depth):
        c, _ = self.expr(self.choice(["bool", "b1"]), depth)
        (x, bx), (y, by) = self.expr(t, depth), self.expr(t, depth)
        return f"({x} if {c} else {y})", max(bx, by)

    def e_call(self, t, depth):
        if t == "float":
            fn = self.choice(["sqrt", "exp", "log", "sin", "cos", "tanh", "atan", "fabs", "floor_f", "pow", "atan2"])
            src = self.choice(["float", "int", "f64", "f32", "i32"])
            x, bx = self.expr(src, depth)
            if fn in ("sqrt", "log") and self.chance(0.6):
                x = f"abs({x}) + 1.0" if fn == "log" else f"abs({x})"
            if fn == "exp" and bx > 700:
                return self.expr(t, depth)
            if fn in ("pow", "atan2"):
                y, by = self.expr("float", depth)
                if fn == "pow" and (bx > 1e3 or by > 4):
                    return f"math.atan2({x}, {y})", 4.0
                return f"math.{fn}({x}, {y})", (max(bx, 1.0) ** by if fn == "pow" else 4.0)
            if fn == "floor_f":
                return f"math.fabs({x})", bx
            bound = {"sqrt": math.sqrt(bx), "exp": math.exp(min(bx, 700)), "log": math.inf,
                     "fabs": bx}.get(fn, 2.0)
            return f"math.{fn}({x})", bound
        if kind(t) == "f":
            fn = self.choice(["sqrt", "floor", "ceil", "trunc", "rint", "fabs", "abs"])
            x, bx = self.expr(t, depth)
            return f"np.{fn}({x})", (math.sqrt(bx) if fn == "sqrt" else bx + 1)
        if t == "int":
            x, bx = self.expr(self.choice(["float", "f64"]), depth)
            if bx >= INT_LIMIT:
                return self.expr(t, depth)
            return f"math.{self.choice(['floor', 'ceil', 'trunc'])}({x})", bx + 1
        x, bx = self.expr(t, depth)
        return f"np.abs({x})", bx

    def e_convert(self, t, depth):
        src = self.choice(list(WEAK + STRONG))
        x, bx = self.expr(src, depth)
        if kind(src) == "f" and kind(t) in "ib" and kind(t) == "i" and bx >= INT_LIMIT:
            return self.expr(t, depth)
        if kind(src) == "i" and kind(t) == "i" and t in STRONG and bx >= TYPE_MAX[t] and src in STRONG:
            return self.expr(t, depth)
        name = {"bool": "bool", "int": "int", "float": "float"}.get(t) or NP_NAME[t]
        bound = {"b": 1, "i": bx, "f": bx}[kind(t)]
        return f"{name}({x})", bound

    def e_compare(self, t, depth):
        src = self.choice(["int", "float", "i32", "i64", "f32", "f64"] if t == "b1" else ["int", "float"])
        other = src if self.chance(0.6) else self.choice(["int", "float"])
        if t == "bool" and (src in STRONG or other in STRONG):
            src = other = "int"
        (x, _), (y, _) = self.expr(src, depth), self.expr(other, depth)
        if t == "b1" and src in WEAK and other in WEAK:
            return f"np.bool_({x} {self.choice(['<', '<=', '==', '!=', '>', '>='])} {y})", 1
        if self.chance(0.15) and t == "bool":
            z, _ = self.expr(src, depth)
            return f"({x} <= {y} < {z})", 1
        return f"({x} {self.choice(['<', '<=', '==', '!=', '>', '>='])} {y})", 1

    def e_logic(self, t, depth):
        (x, _), (y, _) = self.expr(t, depth), self.expr(t, depth)
        return f"({x} {self.choice(['and', 'or'])} {y})", 1

    def e_not(self, t, depth):
        x, _ = self.expr("bool", depth)
        return (f"(not {x})" if t == "bool" else f"np.bool_(not {x})"), 1

    def e_isnan(self, t, depth):
        if t == "bool":
            x, _ = self.expr("float", depth)
            return f"math.{self.choice(['isnan', 'isinf', 'isfinite'])}({x})", 1
        x, _ = self.expr(self.choice(["f32", "f64"]), depth)
        return f"np.{self.choice(['isnan', 'isinf', 'isfinite'])}({x})", 1
