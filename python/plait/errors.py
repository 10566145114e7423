"""Exceptions raised by plait.

Compile errors carry the formatted message (file, line, source line with a
caret) as their text, and also derive from the builtin exception the same
mistake raises in plain Python, so `except TypeError` keeps working.
"""


class CompileError(Exception):
    """A kernel the compiler rejects. Attributes: message (without location),
    path, line, col (0-based) and kind ("Syntax", "Type", ...)."""

    kind = "CompileError"

    def __init__(self, text, *, message=None, path=None, line=None, col=None, kind=None):
        super().__init__(text)
        self.message = text if message is None else message
        self.path = path
        self.line = line
        self.col = col
        if kind is not None:
            self.kind = kind


class KernelSyntaxError(CompileError, SyntaxError):
    """Malformed source."""


class KernelTypeError(CompileError, TypeError):
    """Type inference failed or argument types do not fit."""


class KernelNameError(CompileError, NameError):
    """An unknown name."""


class KernelUnboundLocalError(KernelNameError, UnboundLocalError):
    """A local read where no assignment to it comes first on any path."""


class KernelValueError(CompileError, ValueError):
    """A value the compiler cannot accept."""


class UnsupportedError(CompileError, NotImplementedError):
    """Valid Python outside the subset plait compiles."""


class PragmaError(KernelSyntaxError):
    """A misplaced or malformed #pragma."""


class RaceError(CompileError):
    """A parallel loop whose iterations would race."""


class InternalCompilerError(RuntimeError):
    """A compiler bug, or the system C++ compiler or loader failing."""


# ErrorKind names of src/support/diagnostics.h -> classes.
ERROR_CLASSES = {
    "Syntax": KernelSyntaxError,
    "Type": KernelTypeError,
    "Name": KernelNameError,
    "Value": KernelValueError,
    "Unsupported": UnsupportedError,
    "Pragma": PragmaError,
    "Race": RaceError,
    "UnboundLocal": KernelUnboundLocalError,
}
