// How the pipeline files (pipeline_cpu.cpp, pipeline_cuda.cpp) run a pass:
// each step is named, says whether it changed the function, has its result
// checked by the IR verifier when CompileOptions::verify_ir is set, and is
// shown to the observer (plaitc --dump-dir writes the IR after each step).
#pragma once

#include <string>
#include <utility>

#include "analysis/verify_ir.h"
#include "driver/pipeline.h"

namespace plait {

class PassRunner {
 public:
  PassRunner(ir::Function& function, const CompileOptions& options, const PassObserver& after_pass)
      : function_(function), options_(options), after_pass_(after_pass) {}

  // The function as the front end left it, before any pass.
  void lowered() { finish("lower_to_ir", true); }

  // Runs `pass` (a callable taking ir::Function&). Whether it changed the
  // function is worked out only for an observer: the IR's mutators keep a
  // node whose children did not change, so an unchanged body is mostly the
  // same pointer, but some passes rebuild a body to the same text, so a new
  // body counts as a change when its printed form differs.
  template <typename Pass>
  void operator()(const char* name, Pass&& pass) {
    const ir::Stmt body = function_.body;
    const size_t params = function_.params.size();
    pass(function_);
    finish(name, function_.params.size() != params || (function_.body != body && differs(body)));
  }

  // Runs `pass` as operator() does, unless options.disabled_passes names
  // it. Only passes in the target's optional_passes list run through here:
  // their work only makes the kernel faster, and the pipeline stays correct
  // without them. A skipped pass leaves a remark for explain().
  template <typename Pass>
  void optional(const char* name, Pass&& pass) {
    check_optional(name);
    if (!options_.disabled_passes.count(name)) {
      (*this)(name, std::forward<Pass>(pass));
      return;
    }
    function_.remarks.push_back({SourceLoc{}, name, std::string("pass ") + name + " not run: disabled by request"});
  }

  // From here on every local is declared where the back ends declare it, and
  // the verifier checks that each use is in its declaration's scope.
  void declarations_placed() { verify_.declarations_placed = true; }
  // From here on no break or return leaves a parallel or vector loop.
  void early_exits_refused() { verify_.early_exits_refused = true; }

 private:
  void finish(const char* name, bool changed);
  // An internal error unless `name` is in optional_passes(target).
  void check_optional(const char* name) const;
  // Whether the function's body prints differently from `before` (true
  // without an observer, who alone reads the answer).
  bool differs(const ir::Stmt& before) const;

  ir::Function& function_;
  const CompileOptions& options_;
  const PassObserver& after_pass_;
  analysis::VerifyOptions verify_;  // what holds from the current step on
};

}  // namespace plait
