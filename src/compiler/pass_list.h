// Runs a compile's passes in order. After each one the IR is verified and dumped (KILN_DEBUG=ir prints
// it, --dump-dir writes NN_<pass>.ir, NN its place in the list); a pass that produces text (the
// router's decisions, the plan) dumps that as NN_<pass>.txt. An internal error in a pass names it.
#pragma once
#include <string>

#include "kiln/graph.h"
#include "kiln/options.h"
#include "support/error.h"
#include "support/stage_timer.h"

namespace kiln::compiler {

class PassList {
 public:
  PassList(Graph& graph, const Options& options) : graph_(graph), options_(options) {}

  template <class Pass>
  void run(const char* name, Pass&& pass) {
    const StageTimer timer(options_, name);
    guarded(name, [&] { pass(); });
    finish(name, nullptr, nullptr);
  }
  // `channel`: the KILN_DEBUG channel that prints the text (null: none).
  template <class Pass>
  void run_text(const char* name, const char* channel, Pass&& pass) {
    const StageTimer timer(options_, name);
    std::string text;
    guarded(name, [&] { text = pass(); });
    finish(name, &text, channel);
  }

 private:
  template <class Body>
  void guarded(const char* name, Body&& body) {
    try {
      body();
    } catch (const InternalError& e) {
      rethrow_in(name, e);
    }
  }
  [[noreturn]] void rethrow_in(const char* name, const InternalError& e) const;
  void finish(const char* name, const std::string* text, const char* channel);

  Graph& graph_;
  const Options& options_;
  int next_ = 0;
};

}  // namespace kiln::compiler
