// Control flow inside kernels: loops, two-way branches and N-way calls whose functions are
// traced once into one kernel (docs/control-flow.md).
//
//   auto [x, i] = ff::while_loop(std::make_tuple(x0, i0),
//       [](const ff::Float& x, const ff::UInt32& i) { return i < 10u; },
//       [](ff::Float& x, ff::UInt32& i) { x = x * 0.5f + 1.f; i += 1u; });
//   auto r = ff::if_stmt(std::make_tuple(a, b), mask, true_fn, false_fn);
//   auto y = ff::switch_(index, targets, a, b);
//
// States, arguments and results are anything ff::freeze walks (traverse.h): arrays of every
// type, scalars, std containers and FF_STRUCT types.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "freezeframe/array.h"
#include "freezeframe/errors.h"
#include "freezeframe/freeze.h"
#include "freezeframe/init.h"
#include "freezeframe/traverse.h"

namespace ff {

/// How a while_loop runs.
enum class LoopMode : uint8_t {
  Symbolic,   // traced once into the kernel: the loop runs on the device (the default)
  Evaluated,  // each iteration runs from the host: for debugging and for bodies the symbolic
              // mode refuses (an eval or host read of loop values); refused while recording
};

struct LoopOptions {
  LoopMode mode = LoopMode::Symbolic;
  /// A lane still active after this many iterations leaves the loop with its state as it is
  /// (-1: no limit).
  int64_t max_iterations = -1;
  /// For messages and recorder-dump; not part of the kernel (two equal loops with other names
  /// are one kernel).
  std::string name;
};

namespace detail {

/// Walks a control-flow state, result or argument list: collects its arrays with their paths
/// (Collect) or replaces them in order by the arrays of `handles` (Replace, which takes over
/// one reference each); either way it writes ScanVisitor's shape (structure, scalar values,
/// container sizes), what must stay the same between the state before and after a body, or
/// between the results of two branches.
class FlowVisitor {
 public:
  static constexpr bool kRebuilds = false;

  enum class Mode { Collect, Replace };

  FlowVisitor(Mode mode, std::string base) : mode_(mode), path_(base) {
    stack_.push_back(base);
    scan.raw = true;  // the shape counts moved-from arrays without making variables for them
  }

  std::vector<Handle> handles;  // Collect: the arrays (borrowed); Replace: to take over
  std::vector<std::string> paths;
  ScanVisitor scan;

  template <class A>
  void array(A& a) {
    scan.array(a);
    if (mode_ == Mode::Collect) {
      if (a.ad_index()) [[unlikely]]
        throw Error(path_ +
                    " has gradients enabled, but the loop's body or the branch did not compute "
                    "it from its state or arguments (it captured it: pass the array in the "
                    "loop's state or as the branch's argument, or ff::detach(x))");
      handles.push_back(a.id());
      paths.push_back(path_);
    } else {
      a = A::steal(std::exchange(handles[next_++], Handle{0}));
    }
  }

  template <class S>
  void scalar(const S& s) {
    scan.scalar(s);
  }

  void string(const std::string& s) { scan.string(s); }

  void enter(Node node, size_t& n) {
    scan.enter(node, n);
    stack_.push_back(path_);
  }

  void struct_name(const char* name, uint64_t hash) { scan.struct_name(name, hash); }

  void map_key(std::string& key) { scan.map_key(key); }

  void name(const char* n) { path_ = stack_.back() + "." + n; }

  void index(size_t i) { path_ = stack_.back() + "[" + std::to_string(i) + "]"; }

  void leave() {
    path_ = stack_.back();
    stack_.pop_back();
  }

  /// Drops the references a Replace did not take (after an error).
  ~FlowVisitor() {
    if (mode_ == Mode::Replace)
      for (size_t i = next_; i < handles.size(); ++i)
        dec_ref(handles[i]);
  }

  FlowVisitor(FlowVisitor&&) = default;
  FlowVisitor& operator=(FlowVisitor&&) = delete;

 private:
  Mode mode_;
  std::string path_;
  std::vector<std::string> stack_;
  size_t next_ = 0;
};

template <class T>
FlowVisitor collect(T& value, const std::string& base) {
  FlowVisitor v(FlowVisitor::Mode::Collect, base);
  traverse(v, value);
  return v;
}

/// Replaces the arrays of `value` by `handles` (one reference each, taken over).
template <class T>
void replace_arrays(T& value, const std::vector<Handle>& handles) {
  FlowVisitor v(FlowVisitor::Mode::Replace, "");
  v.handles = handles;
  traverse(v, value);
}

/// Every scalar and container of `value` by path, for the message of check_same_shape.
template <class T>
std::vector<PathVisitor::Item> describe(const T& value, const std::string& base) {
  PathVisitor v;
  v.root(base);
  traverse(v, value);
  return std::move(v.items);
}

/// Undoes an open region when the traced function throws; drops the caller's reference to it.
class RegionScope {
 public:
  explicit RegionScope(Handle region) : region_(region) {}

  ~RegionScope() {
    if (!closed_)
      var_region_abort(region_);
    dec_ref(region_);
  }

  RegionScope(const RegionScope&) = delete;
  RegionScope& operator=(const RegionScope&) = delete;

  Handle get() const { return region_; }

  void closed() { closed_ = true; }

 private:
  Handle region_;
  bool closed_ = false;
};

/// "while_loop 'name'" / "while_loop": how messages name a loop.
inline std::string loop_label(const LoopOptions& o) {
  return o.name.empty() ? std::string("while_loop") : "while_loop '" + o.name + "'";
}

/// Checks that a body or branch kept everything but the arrays of a value, naming the first
/// path that changed.
template <class T>
void check_same_shape(const T& before, const T& after, const ScanVisitor& a, const ScanVisitor& b,
                      const std::string& base, const std::string& label, const char* what) {
  if (a.shape == b.shape)
    return;
  std::vector<PathVisitor::Item> x = describe(before, base), y = describe(after, base);
  std::string where;
  for (size_t i = 0; i < std::max(x.size(), y.size()) && where.empty(); ++i) {
    if (i >= x.size())
      where = y[i].path + " appeared";
    else if (i >= y.size())
      where = x[i].path + " disappeared";
    else if (x[i].path != y[i].path || x[i].what != y[i].what)
      where = x[i].path + ": " + x[i].what + " became " + y[i].path + ": " + y[i].what;
  }
  if (where.empty())
    where = "a scalar changed in digits its printed form does not show";
  throw Error(label + ": " + what + " (" + where + ")");
}

/// The new state's arrays must have the loop's width or size 1, naming the first that has not.
inline void check_state_sizes(const std::string& label, uint64_t width,
                              const std::vector<Handle>& handles,
                              const std::vector<std::string>& paths) {
  for (size_t j = 0; j < handles.size(); ++j) {
    uint64_t n = var_size(handles[j]);
    if (n != width && n != 1)
      throw Error(label + ": the body changed the size of " + paths[j] + " from " +
                  std::to_string(width) + " (the loop's width) to " + std::to_string(n) +
                  " (state arrays keep the loop's width or size 1)");
  }
}

/// Handles held for a while (a reference each), dropped at the end.
struct HeldHandles {
  std::vector<Handle> h;

  HeldHandles() = default;
  HeldHandles(const HeldHandles&) = delete;
  HeldHandles& operator=(const HeldHandles&) = delete;

  ~HeldHandles() {
    for (Handle x : h)
      dec_ref(x);
  }
};

/// Sets this thread's gradient floor (autodiff_api.h) for a differentiated part or body, and
/// restores the one before (the enclosing part's, or none).
struct FloorScope {
  RegionFloor old;

  explicit FloorScope(RegionFloor f) : old(ad_region_floor(f)) {}

  ~FloorScope() { ad_region_floor(old); }

  FloorScope(const FloorScope&) = delete;
  FloorScope& operator=(const FloorScope&) = delete;
};

/// Differentiates a symbolic while_loop whose state has grad-enabled Float/Float64 arrays
/// (autodiff/regions.cpp, docs/autodiff.md). Beside its state the loop carries the lane-wise
/// Jacobian of each Float/Float64 state array by each grad-enabled initial one; each iteration
/// multiplies it by the body's lane-wise Jacobian, which forward mode inside the body gives
/// (the body must be elementwise in its state: checked). Each final array gets a node that
/// passes gradients back to the initial state, and tangents forward, through the final
/// Jacobian. No iteration is stored, so reverse mode needs no iteration limit.
class LoopGrads {
 public:
  /// Takes the nodes of the Float/Float64 arrays of `st`, the loop's copy of the state (the
  /// caller's holds the nodes), and detaches them from it. Under ff::SuspendGrad, none.
  template <class T>
  LoopGrads(T& st, std::string label) : label_(std::move(label)) {
    bool suspended = ad_suspended();
    for_each_float_array(st, [&](auto& a) {
      if (a.ad_index() && !suspended) {
        rows_.push_back(types_.size());
        sources_.push_back(a.ad_index());
        ad_inc_ref(a.ad_index());  // held until the results' nodes hold them
      }
      types_.push_back(std::decay_t<decltype(a)>::kType);
      a.set_ad_index(0);
    });
  }

  ~LoopGrads() {
    for (AdIndex n : sources_)
      ad_dec_ref(n);
    release_leaves();
  }

  LoopGrads(const LoopGrads&) = delete;
  LoopGrads& operator=(const LoopGrads&) = delete;

  bool active() const { return !sources_.empty(); }

  /// The Jacobian before the first iteration (a reference each), appended to the loop's
  /// initial state.
  std::vector<Handle> inits() const { return ad_loop_identity(types_, rows_); }

  /// Before the body: takes the Jacobian's placeholders (a reference each) and puts new leaves
  /// on the state's Float/Float64 arrays, the only nodes the body may use.
  template <class T>
  void enter(T& st, std::vector<Handle> carried) {
    carried_.h = std::move(carried);
    first_ = ad_next_index();
    floor_.emplace(RegionFloor{first_, var_region_depth()});
    for_each_float_array(st, [&](auto& a) {
      a.set_ad_index(ad_new_leaf(a.id(), 0));
      leaves_.push_back(a.ad_index());
      ad_inc_ref(a.ad_index());  // held: the body may replace the array without reading it
      placeholders_.push_back(a.id());
    });
  }

  /// After the body: checks the new state and returns the Jacobian's new value (a reference
  /// each), appended to the body's new state; detaches the state's arrays.
  template <class T>
  std::vector<Handle> leave(T& st) {
    std::vector<std::pair<AdIndex, Handle>> outs;  // node, value (borrowed)
    for_each_float_array(st, [&](auto& a) { outs.emplace_back(a.ad_index(), a.id()); });
    if (outs.size() != types_.size()) {  // check_same_shape names what changed
      for_each_float_array(st, [](auto& a) { a.set_ad_index(0); });
      return {};
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outs[i].first && outs[i].first < first_)
        throw Error(label_ + ": the body's new value of Float/Float64 state array " +
                    std::to_string(i) +
                    " has gradients enabled, but the body did not compute it from the state "
                    "(it captured it: pass the array in the loop's state, or ff::detach(x))");
      // A symbolic loop refuses gathers from and reductions of its own values already; this
      // keeps the derivative right should an operation that is not lane by lane get in.
      if (std::string what = outs[i].first ? ad_lanewise(outs[i].first, first_) : ""; !what.empty())
        throw Error(label_ + ": Float/Float64 state array " + std::to_string(i) +
                    " is computed from the state through " + what +
                    ", whose derivative is not lane by lane: a while_loop differentiates "
                    "bodies that are elementwise in their state (pass ff::detach(x) in the "
                    "state, or do that work outside the loop)");
    }
    std::vector<AdIndex> nodes;
    for (size_t i = 0; i < outs.size(); ++i) {
      // The loop hands out an array the body left as it was (its initial one); one the body
      // detached (ff::detach(x)) comes out detached.
      kept_.push_back(outs[i].second != placeholders_[i] ? Kept::No
                      : outs[i].first == leaves_[i]      ? Kept::Yes
                                                         : Kept::Detached);
      nodes.push_back(outs[i].first);
    }
    HeldHandles body;
    body.h = ad_lanewise_jacobian(leaves_, nodes);
    std::vector<Handle> next = ad_loop_step(types_, body.h, carried_.h);
    for_each_float_array(st, [](auto& a) { a.set_ad_index(0); });
    release_leaves();
    floor_.reset();
    return next;
  }

  /// After the loop: each Float/Float64 array of the results gets a node through the final
  /// Jacobian (`jacobian`, a reference each, taken over). One the body left unchanged is the
  /// initial array itself (the loop hands it out), so its node is the initial one.
  template <class T>
  void finish(T& st, std::vector<Handle> jacobian) {
    HeldHandles held;
    held.h = std::move(jacobian);
    const size_t k = sources_.size();
    size_t i = 0, j = 0;
    for_each_float_array(st, [&](auto& a) {
      bool source = j < k && rows_[j] == i;
      if (kept_[i] == Kept::No) {
        a.set_ad_index(ad_linear(a.id(), sources_.data(), held.h.data() + i * k, k));
      } else if (kept_[i] == Kept::Yes && source) {
        ad_inc_ref(sources_[j]);
        a.set_ad_index(sources_[j]);
      }
      j += source;
      ++i;
    });
  }

 private:
  enum class Kept : uint8_t { No, Yes, Detached };

  void release_leaves() {
    for (AdIndex n : std::exchange(leaves_, {}))
      ad_dec_ref(n);
  }

  std::string label_;
  std::vector<ScalarType> types_;  // per Float/Float64 array of the state
  std::vector<size_t> rows_;       // the grad-enabled ones' positions among them
  std::vector<AdIndex> sources_;   // and nodes (a reference each)
  HeldHandles carried_;            // the carried Jacobian as the body sees it (enter())
  AdIndex first_ = 0;
  std::vector<AdIndex> leaves_;       // the body's, a reference each while it is traced
  std::vector<Handle> placeholders_;  // the state's Float/Float64 arrays in the body (borrowed)
  std::vector<Kept> kept_;            // which of them the body left as they were
  std::optional<FloorScope> floor_;
};

/// A while_loop in evaluated mode (control_flow.cpp holds the non-template parts).
template <class... S, class Cond, class Body>
std::tuple<S...> while_loop_evaluated(const std::tuple<S...>& state, Cond& cond, Body& body,
                                      const LoopOptions& opt) {
  const std::string label = loop_label(opt);
  if (var_recording())
    throw FreezeError(label +
                      ": LoopMode::Evaluated runs each iteration from the host, which a "
                      "recording cannot hold; use LoopMode::Symbolic (the default)");
  std::tuple<S...> st = state;
  Bool active;
  for (int64_t it = 0; opt.max_iterations < 0 || it < opt.max_iterations; ++it) {
    Bool c = std::apply([&](const S&... s) { return cond(s...); }, std::as_const(st));
    active = it == 0 ? c : (active & c);
    eval(active);
    if (!any(active).to_vector().at(0))
      break;
    std::tuple<S...> next = st;
    var_push_scatter_mask(active.id());
    try {
      std::apply([&](S&... s) { body(s...); }, next);
    } catch (...) {
      var_pop_scatter_mask();
      throw;
    }
    var_pop_scatter_mask();
    FlowVisitor cur = collect(st, "state");
    FlowVisitor upd = collect(next, "state");
    check_same_shape(st, next, cur.scan, upd.scan, "state", label,
                     "the body changed a loop-invariant part of the state");
    std::vector<Handle> merged;
    try {
      for (size_t j = 0; j < cur.handles.size(); ++j)
        merged.push_back(var_ternary(Op::Select, active.id(), upd.handles[j], cur.handles[j]));
      var_eval(merged);
    } catch (...) {
      for (Handle h : merged)
        dec_ref(h);
      throw;
    }
    replace_arrays(st, merged);
  }
  return st;
}

}  // namespace detail

/// Runs `body` on the state while `cond` holds, per lane: a lane leaves when its condition is
/// false; the loop ends when no lane is active (or after opt.max_iterations iterations). In the
/// symbolic mode cond and body are traced once, on placeholder arrays, into one kernel. Returns
/// the final state; `state` itself is not modified. State arrays have the loop's width (the
/// largest size among them) or size 1; everything else in the state must stay as it is.
template <class... S, class Cond, class Body>

requires(
    std::same_as<std::remove_cvref_t<std::invoke_result_t<Cond&, const S&...>>, Bool>&&
        std::invocable<Body&, S&...>) std::tuple<S...> while_loop(const std::tuple<S...>& state,
                                                                  Cond&& cond, Body&& body,
                                                                  const LoopOptions& opt = {}) {
  using detail::FlowVisitor;
  using detail::Handle;
  const std::string label = detail::loop_label(opt);
  std::tuple<S...> st = state;
  detail::LoopGrads grads(st, label);
  if (opt.mode == LoopMode::Evaluated) {
    if (grads.active())
      throw Error(label +
                  ": the state has gradients enabled, and LoopMode::Evaluated does not "
                  "differentiate (use LoopMode::Symbolic, the default, or ff::detach(x))");
    return detail::while_loop_evaluated(st, cond, body, opt);
  }
  FlowVisitor before = detail::collect(st, "state");
  const size_t n = before.handles.size();
  detail::HeldHandles jacobian;  // grads: the Jacobian's initial value
  std::vector<Handle> inits = before.handles;
  if (grads.active()) {
    jacobian.h = grads.inits();
    inits.insert(inits.end(), jacobian.h.begin(), jacobian.h.end());
  }
  std::vector<Handle> placeholders(inits.size(), 0);
  uint64_t limit =
      opt.max_iterations < 0 ? ~uint64_t{0} : static_cast<uint64_t>(opt.max_iterations);
  detail::RegionScope loop(
      detail::var_loop_begin(opt.name.c_str(), limit, inits, placeholders.data()));
  detail::HeldHandles carried;  // grads: the Jacobian's placeholders
  carried.h.assign(placeholders.begin() + static_cast<ptrdiff_t>(n), placeholders.end());
  placeholders.resize(n);
  detail::replace_arrays(st, placeholders);
  const uint64_t width = detail::var_size(loop.get());
  Bool c = std::apply([&](const S&... s) { return cond(s...); }, std::as_const(st));
  detail::var_loop_cond(loop.get(), c.id());
  if (grads.active())
    grads.enter(st, std::exchange(carried.h, {}));
  std::apply([&](S&... s) { body(s...); }, st);
  detail::HeldHandles next;  // grads: the Jacobian after the body
  if (grads.active())
    next.h = grads.leave(st);
  FlowVisitor after = detail::collect(st, "state");
  detail::check_same_shape(state, st, before.scan, after.scan, "state", label,
                           "the body changed a loop-invariant part of the state");
  detail::check_state_sizes(label, width, after.handles, after.paths);
  std::vector<Handle> yields = after.handles;
  yields.insert(yields.end(), next.h.begin(), next.h.end());
  std::vector<Handle> results(yields.size(), 0);
  detail::var_loop_end(loop.get(), yields, results.data());
  loop.closed();
  detail::HeldHandles final_jacobian;
  final_jacobian.h.assign(results.begin() + static_cast<ptrdiff_t>(n), results.end());
  results.resize(n);
  detail::replace_arrays(st, results);
  if (grads.active())
    grads.finish(st, std::exchange(final_jacobian.h, {}));
  // FF_DEBUG: a lane whose condition still holds for its final state stopped at the limit.
  // (A host read, so not while recording: a recording is checked when it runs traced.)
  if (opt.max_iterations >= 0 && flag(Flag::Debug) && !detail::var_recording()) {
    Bool still = std::apply([&](const S&... s) { return cond(s...); }, std::as_const(st));
    uint32_t lanes = count(still).to_vector().at(0);
    if (lanes)
      detail::warn_iteration_limit(label, lanes, static_cast<uint64_t>(opt.max_iterations));
  }
  return st;
}

namespace detail {

/// The parts of a branch or call as they are traced: each part's result must have the first
/// part's shape (checked against the shape taken once), and at the end the region's results
/// take the place of the first result's arrays.
template <class R>
class BranchParts {
 public:
  BranchParts(Handle region, const char* label) : region_(region), label_(label) {}

  /// Ends the next part with the arrays of `r`, then `extra` (borrowed: a differentiated
  /// branch's derivatives, as many for every part).
  void add(R r, std::span<const Handle> extra = {}) {
    FlowVisitor v = collect(r, "result");
    if (first_)
      check_same_shape(*first_, r, first_shape_, v.scan, "result", label_,
                       "the parts return values that differ in more than their arrays");
    v.handles.insert(v.handles.end(), extra.begin(), extra.end());
    var_branch_part(region_.get(), v.handles);
    if (!first_) {
      first_shape_ = std::move(v.scan);
      first_.emplace(std::move(r));
      n_extra_ = extra.size();
    }
  }

  /// Closes the region (every part added) and returns its results; the extra ones (a
  /// reference each) into `extra`.
  R finish(std::vector<Handle>* extra = nullptr) {
    size_t n = first_shape_.leaves.size();
    std::vector<Handle> results(n + n_extra_, 0);
    var_branch_end(region_.get(), results.data());
    region_.closed();
    if (extra)
      extra->assign(results.begin() + static_cast<ptrdiff_t>(n), results.end());
    else
      for (size_t i = n; i < results.size(); ++i)
        dec_ref(results[i]);
    results.resize(n);
    replace_arrays(*first_, results);
    return std::move(*first_);
  }

 private:
  RegionScope region_;
  const char* label_;
  std::optional<R> first_;
  ScanVisitor first_shape_;
  size_t n_extra_ = 0;
};

/// Differentiates a branch or call whose arguments have gradients enabled (autodiff/regions.cpp,
/// docs/autodiff.md): each part runs on new leaves in place of the grad-enabled arguments, and
/// forward mode inside it gives the lane-wise derivative of each Float/Float64 array of its
/// result by each of them (the part must be elementwise in them: checked); those go out of the
/// region with the results, and each result array gets a node that passes gradients back to
/// the arguments (and tangents forward) through them.
template <class... A>
class BranchGrads {
 public:
  /// `args` (borrowed) are the branch's arguments, as the parts take them.
  BranchGrads(const std::tuple<const A&...>& args, const char* label) : args_(args), label_(label) {
    each_array(args_, [&](auto& a) {
      grad_.push_back(a.ad_index() != 0);
      if (a.ad_index())
        sources_.push_back(a.ad_index());
    });
  }

  /// Whether the region is differentiated: an argument has gradients enabled, outside
  /// ff::SuspendGrad.
  bool active() const { return !sources_.empty() && !ad_suspended(); }

  /// Parts of a region that is not: under ff::SuspendGrad, a result passed through from an
  /// argument comes out detached.
  template <class R>
  R plain(R r) const {
    if (!sources_.empty())
      for_each_float_array(r, [](auto& a) { a.set_ad_index(0); });
    return r;
  }

  /// Traces every part (`fns`, in order) and closes the region.
  template <class R, class... Fn>
  R run(BranchParts<R>& parts, Fn&... fns) {
    if constexpr (kCopyable) {
      (part(parts, fns), ...);
      return close(parts);
    } else {
      throw uncopyable();
    }
  }

  /// The same with the parts in a range (switch_'s targets).
  template <class R, class Targets>
  R run_each(BranchParts<R>& parts, const Targets& targets) {
    if constexpr (kCopyable) {
      for (const auto& target : targets)
        part(parts, target);
      return close(parts);
    } else {
      throw uncopyable();
    }
  }

 private:
  template <class R>
  R close(BranchParts<R>& parts) {
    HeldHandles derivatives;
    R result = parts.finish(&derivatives.h);
    size_t k = 0, n = sources_.size();
    for_each_float_array(result, [&](auto& a) {
      a.set_ad_index(ad_linear(a.id(), sources_.data(), derivatives.h.data() + k * n, n));
      ++k;
    });
    return result;
  }

  /// Calls f on each Float/Float64 array of the arguments that traverse() walks (others, such as
  /// a struct that is no FF_STRUCT, are passed to the parts as they are: a grad-enabled array
  /// inside one is refused as one the branch captured).
  template <class Tuple, class F>
  static void each_array(Tuple& args, F&& f) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      (
          [&] {
            if constexpr (walkable<std::tuple_element_t<I, std::tuple<A...>>>())
              for_each_float_array(std::get<I>(args), f);
          }(),
          ...);
    }
    (std::index_sequence_for<A...>());
  }

  using Copies = std::tuple<std::decay_t<A>...>;
  static constexpr bool kCopyable = std::is_copy_constructible_v<Copies>;

  // The parts run on copies of the arguments (with new leaves in them).
  Error uncopyable() const {
    return Error(std::string(label_) +
                 ": an argument has gradients enabled, and the branch is differentiated on "
                 "copies of its arguments, which these types do not allow (pass copyable "
                 "arguments, or ff::detach(x))");
  }

  template <class R, class Fn>
  void part(BranchParts<R>& parts, Fn& fn) {
    HeldHandles derivatives;
    std::optional<R> r;
    {
      AdIndex first = ad_next_index();
      FloorScope floor({first, var_region_depth()});
      Copies leaves = copies();
      std::vector<AdIndex> leaf_nodes;
      size_t at = 0;
      each_array(leaves, [&](auto& a) {
        AdIndex node = grad_[at++] ? ad_new_leaf(a.id(), 0) : 0;
        a.set_ad_index(node);
        if (node)
          leaf_nodes.push_back(node);
      });
      r.emplace(std::apply(fn, leaves));
      std::vector<std::pair<AdIndex, Handle>> outs;  // node, value (borrowed)
      for_each_float_array(*r, [&](auto& a) { outs.emplace_back(a.ad_index(), a.id()); });
      for (size_t k = 0; k < outs.size(); ++k) {
        if (outs[k].first && outs[k].first < first)
          throw Error(std::string(label_) + ": result array " + std::to_string(k) +
                      " has gradients enabled, but the branch did not compute it from its "
                      "arguments (it captured it: pass the array to the branch as an argument, "
                      "or ff::detach(x))");
        if (std::string what = outs[k].first ? ad_lanewise(outs[k].first, first) : "";
            !what.empty())
          throw Error(std::string(label_) + ": result array " + std::to_string(k) +
                      " is computed from a grad-enabled argument through " + what +
                      ", whose derivative is not lane by lane: a branch differentiates "
                      "elementwise work on its arguments only (pass ff::detach(x), or do that "
                      "work outside the branch)");
      }
      std::vector<AdIndex> nodes;
      for (auto [node, value] : outs)
        nodes.push_back(node);
      derivatives.h = ad_lanewise_jacobian(leaf_nodes, nodes);
      for (size_t i = 0; i < derivatives.h.size(); ++i)
        if (!derivatives.h[i]) {  // every part yields as many: zeros where none reaches
          Handle out = outs[i / leaf_nodes.size()].second;
          derivatives.h[i] = var_literal(var_type(out), 0, var_width(out));
        }
      for_each_float_array(*r, [](auto& a) { a.set_ad_index(0); });
    }
    parts.add(std::move(*r), derivatives.h);
  }

  Copies copies() const { return Copies(args_); }

  const std::tuple<const A&...>& args_;
  const char* label_;
  std::vector<uint8_t> grad_;     // per Float/Float64 array of the arguments
  std::vector<AdIndex> sources_;  // the grad-enabled ones' nodes (held by the caller's)
};

}  // namespace detail

/// Each lane gets true_fn(args...) where `mask` is true and false_fn(args...) where it is
/// false. Both are traced once; side effects inside them happen only for their lanes. Both
/// return the same type, which may hold anything ff::freeze walks; non-array parts must agree.
template <class... A, class T, class F>

requires(std::invocable<T&, const A&...>&& std::invocable<F&, const A&...>&& std::same_as<
         std::remove_cvref_t<std::invoke_result_t<T&, const A&...>>,
         std::remove_cvref_t<
             std::invoke_result_t<F&, const A&...>>>) auto if_stmt(const std::tuple<A...>& args,
                                                                   const Bool& mask, T&& true_fn,
                                                                   F&& false_fn) {
  using R = std::remove_cvref_t<std::invoke_result_t<T&, const A&...>>;
  static_assert(!std::is_void_v<R>, "ff::if_stmt: the branches must return a value");
  detail::BranchParts<R> parts(detail::var_branch_begin("", mask.id(), 0), "if_stmt");
  const std::tuple<const A&...> refs =
      std::apply([](const auto&... a) { return std::tuple<const A&...>(a...); }, args);
  detail::BranchGrads<A...> grads(refs, "if_stmt");
  if (grads.active()) [[unlikely]]
    return grads.run(parts, true_fn, false_fn);
  parts.add(grads.plain(std::apply(true_fn, args)));
  parts.add(grads.plain(std::apply(false_fn, args)));
  return parts.finish();
}

/// Lane l runs targets[index[l]](args...); a lane whose index is out of range runs none and
/// gets zeros in every array of the result. `targets` is a std::array or std::vector of
/// callables of one signature; each is traced once.
template <class Targets, class... A>

requires(std::invocable<const typename Targets::value_type&, const A&...>) auto switch_(
    const UInt32& index, const Targets& targets, const A&... args) {
  using R =
      std::remove_cvref_t<std::invoke_result_t<const typename Targets::value_type&, const A&...>>;
  static_assert(!std::is_void_v<R>, "ff::switch_: the targets must return a value");
  if (targets.size() == 0)
    throw Error("switch_: no targets");
  if (targets.size() > 0xFFFFFFFFull)
    throw Error("switch_: too many targets");
  detail::BranchParts<R> parts(
      detail::var_branch_begin("", index.id(), static_cast<uint32_t>(targets.size())), "switch_");
  const std::tuple<const A&...> refs(args...);
  detail::BranchGrads<A...> grads(refs, "switch_");
  if (grads.active()) [[unlikely]] {
    return grads.run_each(parts, targets);
  }
  for (const auto& target : targets)
    parts.add(grads.plain(target(args...)));
  return parts.finish();
}

}  // namespace ff
