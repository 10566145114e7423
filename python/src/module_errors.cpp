// The Python exceptions of plait._core (module_errors.h).
#include "module_errors.h"

#include <nanobind/stl/string.h>

#include <csignal>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace nb = nanobind;
using namespace nb::literals;

namespace plait::python {

namespace {

// ---------------------------------------------------------------------------
// Error classes, handed over by plait/errors.py at import time. They live as
// long as the process (module state is not torn down before exit).

struct ErrorClasses {
  PyObject* by_kind[8] = {};  // indexed by plait::ErrorKind
  PyObject* internal = nullptr;
};
ErrorClasses g_errors;

// The ErrorKind names plait/errors.py uses.
constexpr std::pair<const char*, plait::ErrorKind> kErrorKindNames[] = {
    {"Syntax", plait::ErrorKind::Syntax},
    {"Type", plait::ErrorKind::Type},
    {"Name", plait::ErrorKind::Name},
    {"Value", plait::ErrorKind::Value},
    {"Unsupported", plait::ErrorKind::Unsupported},
    {"Pragma", plait::ErrorKind::Pragma},
    {"Race", plait::ErrorKind::Race},
    {"UnboundLocal", plait::ErrorKind::UnboundLocal}};

}  // namespace

void set_error_classes(nb::dict by_kind, nb::handle internal) {
  for (const auto& [name, kind] : kErrorKindNames) {
    nb::object cls = by_kind[name];
    g_errors.by_kind[static_cast<int>(kind)] = cls.release().ptr();
  }
  g_errors.internal = nb::borrow(internal).release().ptr();
}

// Raises the Python class for a CompileError, with its parts as attributes.
[[noreturn]] void raise_compile_error(const plait::CompileError& e) {
  PyObject* cls = g_errors.by_kind[static_cast<int>(e.kind())];
  if (cls == nullptr) throw std::runtime_error(e.what());
  nb::object exc =
      nb::borrow(cls)(nb::str(e.what()), "message"_a = e.message(), "path"_a = e.path(), "line"_a = e.loc().line,
                      "col"_a = e.loc().col, "kind"_a = plait::error_kind_name(e.kind()));
  PyErr_SetObject(cls, exc.ptr());
  throw nb::python_error();
}

// A compile error the Python layer finds (plait/source.py: decorators below
// plait.jit), formatted and raised as the compiler's own are.
[[noreturn]] void raise_python_compile_error(const std::string& kind_name, const std::string& message,
                                             const std::string& path, const std::string& text, int first_line, int line,
                                             int col, int end_col) {
  const plait::SourceLoc loc{line, col, line, end_col};
  for (const auto& [name, kind] : kErrorKindNames) {
    if (kind_name == name) raise_compile_error(plait::CompileError(kind, message, {path, text, first_line}, loc));
  }
  throw nb::value_error(("unknown error kind '" + kind_name + "'").c_str());
}

[[noreturn]] void raise_internal_error(const char* what) {
  PyErr_SetString(g_errors.internal != nullptr ? g_errors.internal : PyExc_RuntimeError, what);
  throw nb::python_error();
}

// ---------------------------------------------------------------------------
// Ctrl-C during a call. A kernel runs without giving the interpreter back its
// thread, so Python's SIGINT handler, which only notes the signal for the
// interpreter, cannot stop it. At import a handler of ours goes in front of
// Python's: it sets the flag that the kernels' loops read
// (plait_context::interrupt) and passes the signal on. When a kernel stops
// for it, the interpreter runs Python's handler (PyErr_CheckSignals), which
// raises KeyboardInterrupt or does what the program set. A handler that a
// program installs later with signal.signal replaces ours: kernels then run
// to the end, as before.

volatile int32_t g_interrupt = 0;

namespace {

struct sigaction g_previous_sigint;

void on_sigint(int signal, siginfo_t* info, void* context) {
  g_interrupt = 1;
  if (g_previous_sigint.sa_flags & SA_SIGINFO) {
    g_previous_sigint.sa_sigaction(signal, info, context);
  } else if (g_previous_sigint.sa_handler != SIG_DFL && g_previous_sigint.sa_handler != SIG_IGN) {
    g_previous_sigint.sa_handler(signal);
  }
}

}  // namespace

// Only in front of a handler: the default action ends the process anyway,
// and an ignored signal stays ignored.
void install_sigint_handler() {
  struct sigaction current;
  if (sigaction(SIGINT, nullptr, &current) != 0) return;
  if (!(current.sa_flags & SA_SIGINFO) && (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN)) return;
  g_previous_sigint = current;
  struct sigaction mine;
  std::memset(&mine, 0, sizeof mine);
  mine.sa_sigaction = on_sigint;
  mine.sa_flags = SA_SIGINFO | (current.sa_flags & SA_RESTART);
  sigemptyset(&mine.sa_mask);
  sigaction(SIGINT, &mine, nullptr);
}

namespace {

PyObject* runtime_error_class(int32_t kind) {
  switch (kind) {
    case PLAIT_INDEX_ERROR:
      return PyExc_IndexError;
    case PLAIT_ZERO_DIVISION_ERROR:
      return PyExc_ZeroDivisionError;
    case PLAIT_VALUE_ERROR:
      return PyExc_ValueError;
    case PLAIT_OVERFLOW_ERROR:
      return PyExc_OverflowError;
    case PLAIT_MEMORY_ERROR:
      return PyExc_MemoryError;
    case PLAIT_UNBOUND_LOCAL_ERROR:
      return PyExc_UnboundLocalError;
    case PLAIT_KEYBOARD_INTERRUPT:
      return PyExc_KeyboardInterrupt;
    case PLAIT_KEY_ERROR:
      return PyExc_KeyError;
    default:
      return PyExc_RuntimeError;
  }
}

}  // namespace

// Sets the Python exception of a call that ended with error `status`: the
// kernel's message with the user's file, line and column (in characters,
// as the generated code reports it), then the line with a caret under that
// column; or, for an interrupt, whatever Python's SIGINT handler raises.
void set_kernel_error(int32_t status, plait_context& ctx, const plait::SourceFile& source) {
  if (status == PLAIT_KEYBOARD_INTERRUPT) {
    if (PyErr_CheckSignals() == 0) PyErr_SetNone(PyExc_KeyboardInterrupt);
    return;
  }
  ctx.error_message[sizeof(ctx.error_message) - 1] = '\0';
  std::string message = ctx.error_message;
  if (ctx.error_line > 0) {
    message += " (File \"" + source.path_of(ctx.error_line) + "\", line " +
               std::to_string(source.file_line(ctx.error_line)) + ", col " + std::to_string(ctx.error_col + 1) + ")";
    const std::string excerpt = plait::source_excerpt(
        source, plait::SourceLoc{ctx.error_line, ctx.error_col, ctx.error_line, ctx.error_col + 1});
    if (!excerpt.empty()) message += "\n" + excerpt;
  }
  PyErr_SetString(runtime_error_class(status), message.c_str());
}

[[noreturn]] void rethrow_as_python(const std::exception& e) {
  if (const auto* compile_error = dynamic_cast<const plait::CompileError*>(&e)) raise_compile_error(*compile_error);
  raise_internal_error(e.what());
}

}  // namespace plait::python
