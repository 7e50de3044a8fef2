// The gradient graph: one node per array value that depends on a grad-enabled leaf, holding
// what its derivative rule needs (the operation, its operands' nodes and variables) and the
// gradient accumulated into it. Nodes are numbered in the order they are made, so an operand's
// node always has a smaller number than its result's: ascending order is a topological order
// (forward mode), descending its reverse (reverse mode).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "autodiff/var.h"
#include "freezeframe/detail/autodiff_api.h"

namespace ff::detail::ad {

/// What made a node; with Node::op it selects the derivative rule (autodiff/rules.cpp).
enum class Kind : uint8_t {
  Leaf,           // ff::enable_grad
  Elementwise,    // Node::op on 1-3 operands (Select's operand 0 is its mask)
  Cast,           // between floating types
  Gather,         // operand 0 the source; index, mask
  Scatter,        // operand 0 the old target, 1 the value; index, mask
  ScatterAdd,     // as Scatter, adding
  ScatterReduce,  // as Scatter, by Node::reduction (Prod, Min, Max); arg[0] the old target
  CallOutput,     // output Node::call_output of a replayed frozen call; operands in Node::more
  Linear,         // a branch's or loop's result: operand j (in Node::more) times Node::coef[j]
  Reduce,         // Node::reduction of operand 0
  Mean,
  PrefixSum,  // Node::exclusive
};

struct Node {
  Kind kind = Kind::Leaf;
  Op op = Op::Add;
  Reduction reduction = Reduction::Sum;
  bool exclusive = false;
  /// Keeps the gradients that reach it (leaves, and arrays named by enable_grad).
  bool retain = false;
  ScalarType type = ScalarType::Float32;
  uint32_t refs = 1;                // arrays holding it + nodes whose operand it is
  Size width;                       // the array's size, with provenance
  std::array<AdIndex, 3> source{};  // the operands' nodes (0: none, no gradient flows there)
  std::array<Var, 3> arg;           // the operands' variables, where a rule needs them
  Var result;                       // the node's own value, where a rule needs it
  Var index, mask;                  // gathers and scatters
  Var grad;                         // accumulated gradient (0: zeros)
  std::vector<AdIndex> more;        // operands past the three (a frozen call's inputs)
  std::vector<Var> coef;            // Linear: per operand in `more`, its lane-wise derivative
  std::shared_ptr<CallBackward> call;
  uint32_t call_output = 0;
};

/// Calls f on each operand node of n (0s skipped).
template <class Fn>
void for_each_source(const Node& n, Fn&& f) {
  for (AdIndex s : n.source)
    if (s)
      f(s);
  for (AdIndex s : n.more)
    if (s)
      f(s);
}

class Graph {
 public:
  /// The process's graph (arrays are handed between threads: one graph, one lock).
  static Graph& get();

  std::mutex& lock() { return mutex_; }

  /// Adds `n` (whose sources gain a reference each) and returns its number. Lock held.
  AdIndex add(Node n);
  Node& at(AdIndex i);
  /// Lock held. Dropping the last reference frees the node and, in turn, its sources'.
  void inc_ref(AdIndex i);
  void dec_ref(AdIndex i);

  /// Nodes numbered above `i`, in ascending order (forward mode's walk).
  std::map<AdIndex, Node>::iterator after(AdIndex i) { return nodes_.upper_bound(i); }

  std::map<AdIndex, Node>::iterator end() { return nodes_.end(); }

  size_t size() const { return nodes_.size(); }

  /// The number the next node gets. Lock held.
  AdIndex next_index() const { return next_; }

  /// Visits `from` and every node it depends on that is numbered `lowest` or above, each once,
  /// until `visit(node)` returns true; returns whether it did. Operands have smaller numbers
  /// than their results, so nothing below `lowest` is walked. Lock held.
  template <class Visit>
  bool find_below(AdIndex from, AdIndex lowest, Visit&& visit) {
    std::vector<AdIndex> todo{from};
    std::unordered_set<AdIndex> seen;
    while (!todo.empty()) {
      AdIndex i = todo.back();
      todo.pop_back();
      if (i < lowest || !seen.insert(i).second)
        continue;
      const Node& n = at(i);
      if (visit(i, n))
        return true;
      for_each_source(n, [&](AdIndex s) { todo.push_back(s); });
    }
    return false;
  }

  /// The frozen-call backwards of nodes freed so far, to drop without the lock. Lock held.
  std::vector<std::shared_ptr<CallBackward>> take_retired() { return std::move(retired_); }

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<CallBackward>> retired_;
  std::map<AdIndex, Node> nodes_;
  AdIndex next_ = 1;
};

/// Thread-local ff::SuspendGrad depth.
bool suspended() noexcept;

/// While a part of a branch region or a loop's body is differentiated on this thread
/// (regions.cpp), and no region opened inside it: the first node number of the part, from
/// which nodes may be made inside the region; 0 otherwise.
AdIndex region_floor() noexcept;

/// Refuses a node made inside such a part from an older node (an array the part captured).
void check_floor(const Node& n);

}  // namespace ff::detail::ad
