// The lowering table: one entry per op (ops.def) holding the function that lowers it. A backend may
// override an op's lowering; the override receives a fixed handle to the function it replaces,
// resolved once when it registers. Registering the same override again is a no-op, so an override
// can never capture itself as "the original" (the bug this prevents: a second registration wrapped
// the wrapper, and lowering recursed forever).
//
// The table is a template over the lowering signature, so it is independent of the loop IR that
// lowerings produce; the compiler instantiates it with its own signature.
#pragma once
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "support/error.h"

namespace kiln::lower {

template <class Signature>
class LoweringTable;

template <class R, class... Args>
class LoweringTable<R(Args...)> {
 public:
  using Fn = std::function<R(Args...)>;
  // Builds an override from the lowering it replaces (which may be empty: no lowering yet).
  using MakeOverride = std::function<Fn(Fn previous)>;

  // Sets the base lowering of `op` under `name`, before any override. Setting the same name again
  // is a no-op; another name for an op that has a base is an internal error (two owners of one op).
  void set_base(OpKind op, std::string name, Fn fn) {
    Entry& e = entry(op);
    if (!e.base.empty()) {
      if (e.base == name) return;
      internal_error("lowering of {}: base '{}' is already registered, '{}' may not replace it", op_name(op), e.base,
                     name);
    }
    KILN_INTERNAL_CHECK(e.chain.empty(), "lowering of {}: base '{}' registered after overrides ({})", op_name(op),
                        name, describe(op));
    KILN_INTERNAL_CHECK(fn != nullptr, "lowering of {}: base '{}' is empty", op_name(op), name);
    e.base = name;
    e.chain.push_back(std::move(name));
    e.fn = std::move(fn);
  }

  // Overrides `op` with make(previous), where previous is the lowering in place now. Registering the
  // same `key` again changes nothing and returns false.
  bool add_override(OpKind op, std::string key, const MakeOverride& make) {
    Entry& e = entry(op);
    for (const auto& k : e.chain)
      if (k == key) return false;
    Fn previous = e.fn;  // a copy: fixed now, whatever is registered later
    Fn next = make(previous);
    KILN_INTERNAL_CHECK(next != nullptr, "lowering of {}: override '{}' made an empty function", op_name(op), key);
    e.fn = std::move(next);
    e.chain.push_back(std::move(key));
    return true;
  }

  bool has(OpKind op) const { return static_cast<bool>(entries_[index(op)].fn); }

  // Lowers through the current entry. Nested lowering of the same op is allowed (a decomposition
  // may lower a smaller instance), but depth is bounded: runaway recursion is an internal error
  // naming the op and the chain, not a stack overflow.
  R call(OpKind op, Args... args) const {
    const Entry& e = entries_[index(op)];
    if (!e.fn) internal_error("no lowering registered for {}", op_name(op));
    int& depth = depth_[index(op)];
    if (depth >= kMaxDepth)
      internal_error("lowering of {} re-entered itself {} times (chain: {})", op_name(op), kMaxDepth, describe(op));
    struct DepthGuard {
      int& d;
      explicit DepthGuard(int& x) : d(x) { ++d; }
      ~DepthGuard() { --d; }
    } guard(depth);
    return e.fn(std::forward<Args>(args)...);
  }

  // "base > override1 > override2" for explain output and errors.
  std::string describe(OpKind op) const {
    std::string s;
    for (const auto& k : entries_[index(op)].chain) s += (s.empty() ? "" : " > ") + k;
    return s.empty() ? "(none)" : s;
  }

 private:
  static constexpr int kMaxDepth = 64;
  struct Entry {
    Fn fn;
    std::string base;
    std::vector<std::string> chain;  // base first, then overrides in registration order
  };
  // Nesting depth per op on this thread (compiles may run on several threads at once).
  static inline thread_local std::array<int, kNumOps> depth_{};
  static size_t index(OpKind op) { return static_cast<size_t>(op); }
  Entry& entry(OpKind op) { return entries_[index(op)]; }
  std::array<Entry, kNumOps> entries_{};
};

}  // namespace kiln::lower
