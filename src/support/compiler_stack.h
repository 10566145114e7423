// The stack the compiler runs on, and the nesting limits that fit in it.
//
// The parser, the lowering, the passes and the code generators all recurse
// over expression trees, so the stack a compile needs grows with the depth of
// the kernel's expressions. The parser refuses expressions nested deeper than
// kMaxExpressionDepth, and entry points run the compiler on a thread of their
// own with kCompilerStackBytes of stack, so whether a kernel compiles does
// not depend on the stack of the thread that asks for it (a Python thread
// started after threading.stack_size(256 * 1024), for instance).
#pragma once

#include <cstddef>
#include <functional>

namespace plait {

// The deepest expression tree the parser accepts, counting every operator,
// call, subscript and parenthesis level (a left-deep chain `a + a + ... + a`
// of n terms is n - 1 levels deep). CPython refuses 201 nested parentheses.
// At this depth a compile needs under 1 MiB of stack (measured with g++ 12
// -O3: 197 nested parentheses between 0.5 and 0.75 MiB, the parser's share
// the largest; a 198-term sum under 0.4 MiB), so kCompilerStackBytes leaves a
// margin of more than 60 times.
inline constexpr int kMaxExpressionDepth = 200;

// The stack of the compiler's thread. Only the pages a compile touches are
// committed.
inline constexpr size_t kCompilerStackBytes = size_t{64} << 20;

// Runs `body` on a new thread with kCompilerStackBytes of stack and waits
// for it; an exception thrown by `body` is rethrown in the caller's thread.
// Throws std::runtime_error when the thread cannot be started.
void run_on_compiler_stack(const std::function<void()>& body);

}  // namespace plait
