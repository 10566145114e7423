// The Python exceptions of the extension plait._core: compile errors as the
// classes of plait/errors.py, run-time errors of kernels with the user's line
// and a caret, and Ctrl-C during a call (SIGINT).
#pragma once

#include <nanobind/nanobind.h>

#include <exception>
#include <string>

#include "runtime/abi.h"
#include "support/diagnostics.h"

namespace plait::python {

// Registers the classes plait/errors.py raises for compile errors, by
// ErrorKind name, and for internal errors.
void set_error_classes(nanobind::dict by_kind, nanobind::handle internal);

// Raises the Python class for a CompileError, with its parts as attributes.
[[noreturn]] void raise_compile_error(const plait::CompileError& e);

// A compile error the Python layer finds (plait/source.py), raised as the
// compiler's own are.
[[noreturn]] void raise_python_compile_error(const std::string& kind_name, const std::string& message,
                                             const std::string& path, const std::string& text, int first_line, int line,
                                             int col, int end_col);

[[noreturn]] void raise_internal_error(const char* what);

// A CompileError as its Python class, anything else as an internal error.
[[noreturn]] void rethrow_as_python(const std::exception& e);

// The flag the kernels' loops read (plait_context::interrupt), set by the
// SIGINT handler that install_sigint_handler puts in front of Python's.
extern volatile int32_t g_interrupt;
void install_sigint_handler();

// Sets the Python exception of a call that ended with error `status`.
void set_kernel_error(int32_t status, plait_context& ctx, const plait::SourceFile& source);

}  // namespace plait::python
