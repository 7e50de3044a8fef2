// Frozen functions: ff::freeze(fn) traces fn once per kind of call, records what it does, and
// replays that recording on every later call of the same kind — with inputs of any size the
// recorded size expressions and guards allow. See docs/freeze.md.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "freezeframe/autodiff.h"
#include "freezeframe/errors.h"
#include "freezeframe/init.h"
#include "freezeframe/recording.h"
#include "freezeframe/traverse.h"

namespace ff {

/// Settings of a frozen function; every field has a default.
struct FreezeOptions {
  /// Used in every message (default: "frozen function #k").
  std::string name{};
  /// Recordings kept, least recently used dropped first; 0 runs every call traced.
  size_t limit = std::numeric_limits<size_t>::max();
  /// The recording that makes n_recordings() == warn_after + 1 logs one warning naming what
  /// changed in the key against the nearest earlier one.
  size_t warn_after = 10;
  /// A literal argument that changes between calls becomes opaque (a buffer) and the function
  /// is recorded once more; off: every literal argument is made opaque up front.
  bool auto_opaque = true;
  /// N > 0: every Nth replay also runs the body traced on copies of the arguments and compares
  /// every output (FF_FREEZE_VERIFY=N sets it for every frozen function).
  uint32_t verify = 0;
  /// Stored by save(); load() refuses a file with another version string.
  std::string version{};
  /// Optimise each recording (ff::RecordOptions::optimize; FF_OPTIMIZE=0 turns it off).
  bool optimize = true;
};

namespace detail {

/// A growable byte string for keys and shapes: appends inline, allocates only to grow (the
/// scan of every call writes one).
class ByteBuffer {
 public:
  ByteBuffer() = default;

  ByteBuffer(const ByteBuffer& o) { append(o.data(), o.size()); }

  ByteBuffer& operator=(const ByteBuffer& o) {
    if (this != &o) {
      clear();
      append(o.data(), o.size());
    }
    return *this;
  }

  void clear() { size_ = 0; }

  void push_back(uint8_t b) {
    if (size_ == cap_)
      grow(1);
    data_[size_++] = b;
  }

  void append(const void* p, size_t n) {
    if (cap_ - size_ < n)
      grow(n);
    if (n)
      std::memcpy(data_.get() + size_, p, n);
    size_ += n;
  }

  const uint8_t* data() const { return data_.get(); }

  size_t size() const { return size_; }

  const uint8_t* begin() const { return data_.get(); }

  const uint8_t* end() const { return data_.get() + size_; }

  std::vector<uint8_t> to_vector() const { return {begin(), end()}; }

  friend bool operator==(const ByteBuffer& a, const ByteBuffer& b) {
    return a.size_ == b.size_ && (a.size_ == 0 || std::memcmp(a.data(), b.data(), a.size_) == 0);
  }

 private:
  // Out of line, so that push_back and append stay small enough to inline.
  [[gnu::noinline]] void grow(size_t n) {
    size_t cap = std::max(cap_ * 2, std::max<size_t>(size_ + n, 64));
    std::unique_ptr<uint8_t[]> bigger(new uint8_t[cap]);
    if (size_)
      std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    cap_ = cap;
  }

  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0, cap_ = 0;
};

/// How a shape names a scalar's type: its size, whether it is floating-point and signed (an
/// enum as its underlying type). Persisted in keys: never change.
template <class S>
constexpr uint8_t scalar_tag() {
  using U = typename std::conditional_t<std::is_enum_v<S>, std::underlying_type<S>,
                                        std::type_identity<S>>::type;
  return static_cast<uint8_t>(sizeof(U) << 2 | (std::is_floating_point_v<U> ? 2 : 0) |
                              (std::is_signed_v<U> ? 1 : 0));
}

/// The byte before each argument in a key's shape part (ScanVisitor::argument). Persisted in
/// keys: never change (recorder/freeze_section.h reads it as format::kArgumentMarker).
inline constexpr uint8_t kArgumentMarker = 0xA0;

/// Readable names for what a shape holds, for messages: "int32", "a tuple of 2", ...
std::string scalar_tag_name(uint8_t tag);
std::string shape_node_name(uint8_t node);

/// Writes what identifies a call's arguments (structure, element types, scalar values) and
/// collects their arrays; the key adds what only the tracer knows (literals, which inputs
/// share a size, aliasing).
struct ScanVisitor {
  static constexpr bool kRebuilds = false;
  ByteBuffer shape;
  std::vector<Handle> leaves;

  /// The array leaves that have gradients enabled (autodiff.h): ordinal and node (borrowed).
  /// Empty for calls without gradients, which then never look at it again.
  std::vector<std::pair<uint32_t, AdIndex>> grad_leaves;
  /// Where each argument's leaves start (frontend/freeze_grads: the arguments the body did
  /// not write get back the gradient nodes they came in with).
  std::vector<uint32_t> argument_starts;

  void clear() {
    shape.clear();
    leaves.clear();
    grad_leaves.clear();
    argument_starts.clear();
  }

  void put(const void* p, size_t n) { shape.append(p, n); }

  void token(Node n) { shape.push_back(static_cast<uint8_t>(n)); }

  /// Set: array leaves are taken as they are, 0 for an array that holds no variable (moved
  /// from), instead of creating an empty variable for it.
  bool raw = false;

  template <class A>
  void array(const A& a) {
    token(Node::Array);
    shape.push_back(static_cast<uint8_t>(A::kType));
    if (a.ad_index()) [[unlikely]]
      grad_leaves.emplace_back(static_cast<uint32_t>(leaves.size()), a.ad_index());
    leaves.push_back(raw ? a.raw_id() : a.id());
  }

  template <class S>
  void scalar(const S& s) {
    token(Node::Scalar);
    shape.push_back(scalar_tag<S>());
    put(&s, sizeof(S));
  }

  void string(const std::string& s) {
    token(Node::String);
    uint64_t n = s.size();
    put(&n, sizeof n);
    put(s.data(), s.size());
  }

  void enter(Node node, size_t& n) {
    token(node);
    uint64_t size = n;
    put(&size, sizeof size);
  }

  void struct_name(const char*, uint64_t hash) { put(&hash, sizeof hash); }

  void map_key(std::string& key) { string(key); }

  void name(const char*) {}

  void index(size_t) {}

  void leave() {}

  void argument() {
    shape.push_back(kArgumentMarker);
    argument_starts.push_back(static_cast<uint32_t>(leaves.size()));
  }
};

/// Collects a result's (and the written-back arguments') arrays and shape: the structure,
/// container sizes and scalar values a replay rebuilds them from; with each array, its
/// gradient node (borrowed) and whose it is (-1 the result, else the argument's position).
struct SinkVisitor : ScanVisitor {
  std::vector<AnyArray> arrays;
  std::vector<AdIndex> nodes;
  std::vector<int32_t> owners;
  int32_t owner = -1;

  template <class A>
  void array(const A& a) {
    ScanVisitor::array(a);
    arrays.emplace_back(a);
    nodes.push_back(a.ad_index());
    owners.push_back(owner);
  }
};

/// An array as the tracer names it, with its element type: a replay's input (borrowed) or
/// output (a reference of this thread that a rebuild takes over: the handle is 0 once taken,
/// and whoever holds the list drops what is left).
struct TypedHandle {
  Handle handle = 0;
  ScalarType type = ScalarType::Float32;
};

/// Rebuilds a result or written-back argument from a recorded shape and the replay's arrays,
/// checking the shape against the types it is rebuilt into: element and scalar types, node
/// kinds, and the counts of tuples, std::arrays and structs. A mismatch (a file saved by
/// another function, a damaged one) raises ff::FreezeError naming both types.
class RebuildVisitor {
 public:
  static constexpr bool kRebuilds = true;

  /// `context` starts every message (the function's name, the file a recording came from).
  RebuildVisitor(const std::vector<uint8_t>& shape, std::span<TypedHandle> arrays,
                 const std::string& context)
      : shape_(shape), arrays_(arrays), context_(context) {}

  /// Calls with gradients: array k also takes over nodes[k], its gradient node (0: none). What
  /// is not taken stays in the list for whoever holds it to drop.
  void set_grad_nodes(std::span<AdIndex> nodes) { nodes_ = nodes; }

  template <class A>
  void array(A& a) {
    expect(Node::Array);
    uint8_t recorded = byte();
    if (recorded != static_cast<uint8_t>(A::kType))
      mismatch(array_name(recorded), array_name(static_cast<uint8_t>(A::kType)));
    if (next_array_ >= arrays_.size())
      fail("the recorded shape holds more arrays than the recording returned");
    size_t k = next_array_++;
    TypedHandle& got = arrays_[k];
    if (got.type != A::kType)
      mismatch(array_name(static_cast<uint8_t>(got.type)),
               array_name(static_cast<uint8_t>(A::kType)));
    a = A::steal(std::exchange(got.handle, Handle{0}));
    if constexpr (kDifferentiable<typename A::Value>)
      if (k < nodes_.size())
        a.set_ad_index(std::exchange(nodes_[k], AdIndex{0}));
  }

  template <class S>
  void scalar(S& s) {
    expect(Node::Scalar);
    uint8_t recorded = byte();
    if (recorded != scalar_tag<S>())
      mismatch("a value of type " + scalar_tag_name(recorded),
               "a value of type " + scalar_tag_name(scalar_tag<S>()));
    take(&s, sizeof(S));
  }

  void string(std::string& s) {
    expect(Node::String);
    uint64_t n = 0;
    take(&n, sizeof n);
    if (n > shape_.size() - pos_)
      fail("a string runs past the end of the recorded shape");
    s.assign(reinterpret_cast<const char*>(shape_.data() + pos_), n);
    pos_ += n;
  }

  void enter(Node node, size_t& n) {
    expect(node);
    uint64_t size = 0;
    take(&size, sizeof size);
    bool fixed = node == Node::StdArray || node == Node::Tuple || node == Node::Struct;
    if (fixed && size != n)
      mismatch(shape_node_name(static_cast<uint8_t>(node)) + " of " + std::to_string(size),
               shape_node_name(static_cast<uint8_t>(node)) + " of " + std::to_string(n));
    if (size > shape_.size() - pos_)  // every element takes a byte at least
      fail("a container of " + std::to_string(size) + " elements cannot be in this shape");
    n = static_cast<size_t>(size);
  }

  void struct_name(const char* name, uint64_t hash) {
    uint64_t recorded = 0;
    take(&recorded, sizeof recorded);
    if (recorded != hash)
      mismatch("another struct", std::string("struct ") + name);
  }

  void map_key(std::string& key) { string(key); }

  void name(const char*) {}

  void index(size_t) {}

  void leave() {}

  void argument() { pos_ += 1; }

  /// After the last traverse: the shape and the arrays must both be used up.
  void finish() const {
    if (pos_ != shape_.size() || next_array_ != arrays_.size())
      fail("the recording returned more than the result and written arguments hold");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void mismatch(const std::string& recorded, const std::string& type) const;
  static std::string array_name(uint8_t type);

  void expect(Node n) {
    if (pos_ >= shape_.size())
      mismatch("nothing more", shape_node_name(static_cast<uint8_t>(n)));
    if (shape_[pos_] != static_cast<uint8_t>(n))
      mismatch(shape_node_name(shape_[pos_]), shape_node_name(static_cast<uint8_t>(n)));
    ++pos_;
  }

  uint8_t byte() {
    if (pos_ >= shape_.size())
      fail("the recorded shape ends early");
    return shape_[pos_++];
  }

  void take(void* out, size_t n) {
    if (n > shape_.size() - pos_)
      fail("the recorded shape ends early");
    std::memcpy(out, shape_.data() + pos_, n);
    pos_ += n;
  }

  const std::vector<uint8_t>& shape_;
  std::span<TypedHandle> arrays_;
  std::span<AdIndex> nodes_;
  const std::string& context_;
  size_t pos_ = 0;
  size_t next_array_ = 0;
};

/// Names every array, scalar and container of a traversal by its path (args[1].vel[0]), for
/// messages: the warning that names what changed, verify's differences.
class PathVisitor {
 public:
  static constexpr bool kRebuilds = false;

  struct Item {
    std::string path;
    std::string what;   // "array float32", "value 5", "size 3", "struct Particle"
    int64_t leaf = -1;  // array: its index among the arrays
  };

  std::vector<Item> items;
  std::vector<std::pair<uint64_t, std::string>> structs;  // each struct seen: name_hash, name

  void root(std::string p) {
    base_ = std::move(p);
    path_ = base_;
  }

  template <class A>
  void array(const A&) {
    items.push_back({path_, std::string("array ") + to_string(A::kType), n_arrays_++});
  }

  template <class S>
  void scalar(const S& s) {
    if constexpr (std::is_enum_v<S>)
      items.push_back({path_, "value " + std::to_string(static_cast<int64_t>(s)), -1});
    else if constexpr (std::is_same_v<S, bool>)
      items.push_back({path_, std::string("value ") + (s ? "true" : "false"), -1});
    else
      items.push_back({path_, "value " + std::to_string(s), -1});
  }

  void string(const std::string& s) { items.push_back({path_, "value \"" + s + "\"", -1}); }

  void enter(Node node, size_t& n) {
    if (node == Node::Vector || node == Node::Map || node == Node::Optional)
      items.push_back({path_, "size " + std::to_string(n), -1});
    stack_.push_back(path_);
  }

  void struct_name(const char* name, uint64_t hash) {
    items.push_back({path_, std::string("struct ") + name, -1});
    structs.emplace_back(hash, name);
  }

  void map_key(std::string&) {}

  void name(const char* n) { path_ = stack_.back() + "." + n; }

  void index(size_t i) { path_ = stack_.back() + "[" + std::to_string(i) + "]"; }

  void leave() {
    path_ = stack_.back();
    stack_.pop_back();
  }

  void argument() {}

 private:
  std::string base_, path_;
  std::vector<std::string> stack_;
  int64_t n_arrays_ = 0;
};

/// Which arguments a recorded call wrote: one byte per argument, 1 where the body changed
/// what the caller holds (another array, another container size or scalar value).
using WrittenArgs = std::vector<uint8_t>;

class FreezeCore;
struct LoadedBackward;  // frontend/freeze_cache.h

/// The frozen function that computes the backward of one recording's calls from one type of
/// call site (CallSite::make_backward makes it on first use), and its core, which f.save
/// writes and which takes what f.load read for it.
struct BackwardCache {
  std::shared_ptr<void> frozen;
  std::shared_ptr<FreezeCore> core;
};

/// One call of a frozen function, seen by the non-template core: the template implements it
/// over the callable, the caller's arguments and the result.
class CallSite {
 public:
  virtual ~CallSite() = default;
  /// Runs the body on the caller's arguments (traced, or being recorded).
  virtual void run() = 0;
  /// Before run(): notes what each argument the body could write (any non-const one) holds.
  virtual void snapshot_arguments() = 0;
  /// After run(): the arguments that now hold something else than at snapshot_arguments().
  /// One emptied by a move (the body took it by value) counts as unchanged: the caller's
  /// object is left as it was.
  virtual WrittenArgs written_arguments() = 0;
  /// After run(): the result, then the written arguments.
  virtual void outputs(SinkVisitor& sink, const WrittenArgs& written) = 0;
  /// After a replay: rebuilds the result and the written arguments. `staged`: into copies
  /// first, committed only when the whole shape fitted the types (a recording's first replay
  /// into these types: a shape that does not fit leaves the caller's arguments as they were).
  virtual void rebuild(RebuildVisitor& r, const WrittenArgs& written, bool staged) = 0;
  /// What identifies the types rebuild() writes (one per instantiation): a recording whose
  /// shape fitted them once always does.
  virtual const void* types() const = 0;
  /// Verify mode: copies the arguments before a replay (which may update them) ...
  virtual void keep_copies() = 0;
  /// ... and after it runs the body traced on those copies, sinking what outputs() would.
  virtual void run_on_copies(SinkVisitor& sink, const WrittenArgs& written) = 0;
  /// Paths of the arguments (args[k]...) and of the outputs (result..., args[k]...).
  virtual void describe_arguments(PathVisitor& p) = 0;
  virtual void describe_outputs(PathVisitor& p, const WrittenArgs& written) = 0;
  /// Calls with gradients (frontend/freeze_grads), after the body ran on the caller's
  /// arguments: gives every output array, in the order outputs() sinks them, the gradient node
  /// nodes[k] (taking over its reference; 0: none). A replay's rebuild sets them instead.
  virtual void set_output_grads(std::span<const AdIndex> nodes, const WrittenArgs& written) = 0;
  /// ... and the arrays of every non-const argument the body did not write the nodes they
  /// came in with: entry[leaf] (borrowed), the argument's leaves starting at starts[k].
  virtual void restore_argument_grads(std::span<const AdIndex> entry,
                                      std::span<const uint32_t> starts,
                                      const WrittenArgs& written) = 0;
  /// A replay whose outputs carry gradients back to the grad-enabled arguments (nodes
  /// `sources`), before its rebuild: the backward of those outputs, over copies of the
  /// arguments as they are now. `cache` keeps the frozen function that computes it (made on
  /// first use: one per recording and call-site types); `function` is the function's name.
  virtual std::shared_ptr<CallBackward> make_backward(const WrittenArgs& written,
                                                      std::span<const AdIndex> sources,
                                                      BackwardCache& cache,
                                                      const std::string& function) = 0;
};

/// Walks a call's outputs (the result's arrays, then the written arguments', as sunk) to output
/// k and keeps ff::backward from it with the seed (the one of s32 or s64) for run(): the
/// backward of a frozen call (Frozen's Site::BackwardBody).
struct SeedOutput : ArrayOnlyVisitor {
  uint32_t k;
  const std::vector<Float>* s32;
  const std::vector<Float64>* s64;
  std::function<void()> run;
  uint32_t n = 0;

  template <class X>
  void array(X& x) {
    if (n++ != k)
      return;
    if constexpr (std::is_same_v<X, Float>) {
      if (!s32->empty())
        run = [&x, s = s32] { ff::backward(x, (*s)[0]); };
    } else if constexpr (std::is_same_v<X, Float64>) {
      if (!s64->empty())
        run = [&x, s = s64] { ff::backward(x, (*s)[0]); };
    }
  }
};

/// The callable of a frozen call's backward (Frozen's Site::BackwardBody): it has no backward
/// of its own (gradients of gradients do not pass through frozen calls).
template <class F>
concept FrozenBackwardBody = requires {
  F::kFrozenBackward;
};

/// Sets the gradient node of every array a traversal meets, in order, from a list (taking over
/// each reference): what set_output_grads and restore_argument_grads walk with.
struct GradNodeSetter : ArrayOnlyVisitor {
  std::span<const AdIndex> nodes;
  size_t next = 0;
  bool borrowed = false;  // the list's references are not the setter's: add one each

  template <class A>
  void array(A& a) {
    AdIndex n = next < nodes.size() ? nodes[next] : 0;
    ++next;
    if constexpr (kDifferentiable<typename A::Value>) {
      if (borrowed && n)
        ad_inc_ref(n);
      a.set_ad_index(n);
    }
  }
};

/// The non-template part of a frozen function: the recording cache, keys, replay and verify.
class FreezeCore {
 public:
  explicit FreezeCore(FreezeOptions options);
  ~FreezeCore();

  /// This thread's scan of the arguments, cleared.
  static ScanVisitor& scan();
  /// True when calls go through recordings (Flag::KernelFreezing on and limit > 0).
  bool freezing() const;
  /// One call, after its arguments were scanned into scan().
  void call(CallSite& site);

  const FreezeOptions& options() const;
  size_t n_recordings() const;
  size_t n_cached() const;
  size_t n_replays() const;
  void clear();
  Recording recording(size_t i) const;
  void save(const std::string& path) const;
  void load(const std::string& path);
  /// A frozen call's backward just made for a recording that f.load read: takes the
  /// recordings the file held for that backward.
  void adopt(const LoadedBackward& loaded);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Whether an argument, scanned before and after the body, still holds the same: the same
/// structure and scalar values and the same arrays, or nothing at all (moved from).
inline bool holds_same(const ScanVisitor& before, const ScanVisitor& after) {
  if (before.shape == after.shape && before.leaves == after.leaves)
    return true;
  return std::all_of(after.leaves.begin(), after.leaves.end(), [](Handle h) { return h == 0; }) &&
         !after.leaves.empty();
}

}  // namespace detail

/// A frozen function (ff::freeze): call it like the callable; copies share the recordings.
template <class F>
class Frozen {
 public:
  Frozen(F fn, FreezeOptions options)
      : fn_(std::make_shared<F>(std::move(fn))),
        core_(std::make_shared<detail::FreezeCore>(std::move(options))) {}

  /// Calls the function: replays a recording of a call of the same kind, or records one. An
  /// argument taken by non-const reference is updated in the caller exactly as a traced call
  /// updates it. Throws ff::FreezeError for what cannot be frozen (a host read inside, an
  /// implicit input), naming the function; the body's own exceptions propagate unchanged.
  template <class... A>
  std::invoke_result_t<F&, A&&...> operator()(A&&... args) {
    using R = std::invoke_result_t<F&, A&&...>;
    if (!core_->freezing())
      return std::invoke(*fn_, std::forward<A>(args)...);
    static_assert(std::is_void_v<R> || std::is_default_constructible_v<R>,
                  "ff::freeze: the function's result type needs a default constructor (a "
                  "replay rebuilds the result from the recording)");
    detail::ScanVisitor& scan = detail::FreezeCore::scan();
    (scan_argument<A>(scan, args), ...);
    Site<R, A...> site(fn_, args...);
    core_->call(site);
    // A call without grad-enabled arguments: what the body made grad-enabled comes out
    // detached, as replays return it. With them, the core gave every array its node.
    if (scan.grad_leaves.empty()) {
      (detach_argument(args), ...);
      if constexpr (!std::is_void_v<R>)
        detail::for_each_float_array(*site.result, [](auto& a) { a.set_ad_index(0); });
    }
    if constexpr (!std::is_void_v<R>)
      return std::move(*site.result);
  }

  size_t n_recordings() const { return core_->n_recordings(); }

  size_t n_cached() const { return core_->n_cached(); }

  size_t n_replays() const { return core_->n_replays(); }

  void clear() { core_->clear(); }

  /// The i-th recording held now, oldest first. Throws ff::Error if there is none.
  Recording recording(size_t i) const { return core_->recording(i); }

  /// Writes every recording held, with its key, result shape, written arguments and the
  /// opaque argument paths, and FreezeOptions::version, to one recording file.
  void save(const std::string& path) const { core_->save(path); }

  /// Adds the recordings of a file written by save(): later calls of their kinds replay them
  /// without tracing. Throws ff::FormatError for a damaged file or one without freeze data,
  /// ff::FreezeError for another FreezeOptions::version. A call of a kind the file does not
  /// hold records for itself (one info log line); a replay of a loaded recording whose result
  /// does not fit the function's types raises ff::FreezeError naming the file.
  void load(const std::string& path) { core_->load(path); }

  const FreezeOptions& options() const { return core_->options(); }

 private:
  template <class T>
  static void detach_argument(T& arg) {
    if constexpr (!std::is_const_v<T>)
      detail::for_each_float_array(arg, [](auto& a) { a.set_ad_index(0); });
  }

  template <class A, class T>
  static void scan_argument(detail::ScanVisitor& scan, T& arg) {
    scan.argument();
    detail::traverse(scan, arg);
  }

  template <class R, class... A>
  class Site final : public detail::CallSite {
   public:
    Site(const std::shared_ptr<F>& fn, A&... args) : fn_(*fn), fn_owner_(fn), args_(args...) {}

    void run() override {
      std::apply(
          [&](auto&... a) {
            if constexpr (std::is_void_v<R>)
              std::invoke(fn_, std::forward<A>(a)...);
            else
              result.emplace(std::invoke(fn_, std::forward<A>(a)...));
          },
          args_);
    }

    void snapshot_arguments() override {
      before_.assign(sizeof...(A), {});
      for_each_writable([&](size_t i, auto& arg) { detail::traverse(before_[i], arg); });
    }

    detail::WrittenArgs written_arguments() override {
      detail::WrittenArgs written(sizeof...(A), 0);
      for_each_writable([&](size_t i, auto& arg) {
        detail::ScanVisitor after;
        after.raw = true;
        detail::traverse(after, arg);
        written[i] = !detail::holds_same(before_[i], after);
      });
      return written;
    }

    void outputs(detail::SinkVisitor& sink, const detail::WrittenArgs& written) override {
      sink.owner = -1;
      if constexpr (!std::is_void_v<R>)
        detail::traverse(sink, *result);
      sink_written(sink, args_, written, std::index_sequence_for<A...>());
    }

    void set_output_grads(std::span<const detail::AdIndex> nodes,
                          const detail::WrittenArgs& written) override {
      detail::GradNodeSetter set{{}, nodes};
      if constexpr (!std::is_void_v<R>)
        detail::traverse(set, *result);
      for_each_written(written, [&](auto& arg) {
        // After the body ran on the caller's arguments, only non-const ones can be written.
        if constexpr (!std::is_const_v<std::remove_reference_t<decltype(arg)>>)
          detail::traverse(set, arg);
      });
      for (size_t k = set.next; k < nodes.size(); ++k)  // none: the shapes matched
        detail::ad_dec_ref(nodes[k]);
    }

    void restore_argument_grads(std::span<const detail::AdIndex> entry,
                                std::span<const uint32_t> starts,
                                const detail::WrittenArgs& written) override {
      for_each_writable([&](size_t i, auto& arg) {
        if (written[i] || i >= starts.size())
          return;
        detail::GradNodeSetter set{{}, entry.subspan(std::min<size_t>(starts[i], entry.size()))};
        set.borrowed = true;
        detail::traverse(set, arg);
      });
    }

    void rebuild(detail::RebuildVisitor& r, const detail::WrittenArgs& written,
                 bool staged) override {
      if (staged)
        rebuild_staged(r, written);
      else
        rebuild_in_place(r, written);
    }

    const void* types() const override {
      static const char tag = 0;
      return &tag;
    }

    void keep_copies() override {
      copies_.emplace(
          std::apply([](auto&... a) { return std::tuple<std::decay_t<A>...>(a...); }, args_));
      // The traced re-run's gradients go to leaves of its own, never to the caller's.
      detail::for_each_float_array(*copies_, [](auto& a) {
        if (a.ad_index())
          a.set_ad_index(detail::ad_copy_leaf(a.ad_index(), a.id()));
      });
    }

    void run_on_copies(detail::SinkVisitor& sink, const detail::WrittenArgs& written) override {
      Entry copies = std::move(*copies_);
      copies_.reset();
      run_copies(fn_, copies, aliases(), written, sink, [] {});
    }

    void describe_arguments(detail::PathVisitor& p) override {
      describe_args(p, nullptr, std::index_sequence_for<A...>());
    }

    void describe_outputs(detail::PathVisitor& p, const detail::WrittenArgs& written) override {
      if constexpr (!std::is_void_v<R>) {
        p.root("result");
        detail::traverse(p, *result);
      }
      describe_args(p, &written, std::index_sequence_for<A...>());
    }

    using Entry = std::tuple<std::decay_t<A>...>;
    // Per argument, the first argument that is the same object (itself where none).
    using Aliases = std::array<uint32_t, sizeof...(A)>;

    // Argument I's type, as the first argument of the same type (the same object can be
    // passed as two arguments only where their types agree).
    template <size_t I>
    static constexpr size_t type_class() {
      size_t c = I;
      [&]<size_t... J>(std::index_sequence<J...>) {
        ((c == I && std::is_same_v<std::tuple_element_t<J, Entry>, std::tuple_element_t<I, Entry>>
              ? void(c = J)
              : void()),
         ...);
      }
      (std::make_index_sequence<I>());
      return c;
    }

    Aliases aliases() const {
      constexpr size_t n = sizeof...(A);
      constexpr auto classes = []<size_t... I>(std::index_sequence<I...>) {
        return std::array<size_t, n>{type_class<I>()...};
      }
      (std::index_sequence_for<A...>());
      const auto addresses = std::apply(
          [](auto&... a) { return std::array<const void*, n>{std::addressof(a)...}; }, args_);
      Aliases alias{};
      for (size_t i = 0; i < n; ++i) {
        alias[i] = static_cast<uint32_t>(i);
        for (size_t j = 0; j < i; ++j)
          if (classes[j] == classes[i] && addresses[j] == addresses[i]) {
            alias[i] = static_cast<uint32_t>(j);
            break;
          }
      }
      return alias;
    }

    // Runs `fn` on `copies`, aliased as `alias` says (one object passed twice, h(p, p), is one
    // copy passed twice), walks the result's arrays then the written arguments' with `v` (the
    // order outputs() sinks them), and calls `then` while the result still lives. Verify's
    // traced re-run and a frozen call's backward.
    template <class Fn, class V, class Then>
    static void run_copies(Fn& fn, Entry& copies, const Aliases& alias,
                           const detail::WrittenArgs& written, V& v, Then&& then) {
      [&]<size_t... I>(std::index_sequence<I...>) {
        auto written_outputs = [&] {
          ((written[I] ? detail::traverse(v, copy_for<I>(copies, alias)) : void()), ...);
        };
        if constexpr (std::is_void_v<R>) {
          std::invoke(fn, forward_copy<A>(copy_for<I>(copies, alias))...);
          written_outputs();
          then();
        } else {
          R traced = std::invoke(fn, forward_copy<A>(copy_for<I>(copies, alias))...);
          detail::traverse(v, traced);
          written_outputs();
          then();
        }
      }
      (std::index_sequence_for<A...>());
    }

    // The body of a frozen call's backward: the call again, on copies of its arguments as
    // they came in (`entry`, detached) whose arrays flagged in `grad` (per Float/Float64 array,
    // in walking order) are new leaves, then ff::backward from output k (the result's arrays,
    // then the written arguments', as the call returns them) with the seed (in s32 or s64).
    // Returns those leaves' gradients, in walking order, by element type.
    struct BackwardBody {
      static constexpr bool kFrozenBackward = true;
      std::shared_ptr<F> fn;
      detail::WrittenArgs written;

      std::tuple<std::vector<Float>, std::vector<Float64>> operator()(
          const Entry& entry, const Aliases& alias, const std::vector<uint8_t>& grad, uint32_t k,
          const std::vector<Float>& s32, const std::vector<Float64>& s64) const {
        Entry copies = entry;
        std::vector<Float> l32;
        std::vector<Float64> l64;
        size_t at = 0;
        detail::for_each_float_array(copies, [&](auto& a) {
          if (at < grad.size() && grad[at++]) {
            a.set_ad_index(detail::ad_new_leaf(a.id(), 0));
            if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a)>, Float>)
              l32.push_back(a);
            else
              l64.push_back(a);
          }
        });
        // Output k as the call returns it, once the body ran.
        detail::SeedOutput seed{{}, k, &s32, &s64, {}, 0};
        auto clear_and_seed = [&] {
          // The body's own backward (a training step's) is not the call's: only the seed's.
          for (Float& l : l32)
            ff::clear_grad(l);
          for (Float64& l : l64)
            ff::clear_grad(l);
          if (seed.run)
            seed.run();
        };
        run_copies(*fn, copies, alias, written, seed, clear_and_seed);
        std::tuple<std::vector<Float>, std::vector<Float64>> out;
        for (const Float& l : l32)
          std::get<0>(out).push_back(ff::detach(ff::grad(l)));
        for (const Float64& l : l64)
          std::get<1>(out).push_back(ff::detach(ff::grad(l)));
        return out;
      }
    };

    // What ff::backward runs for an output of a replay of this call.
    struct Backward final : detail::CallBackward {
      explicit Backward(Entry e) : entry(std::move(e)) {}

      std::shared_ptr<Frozen<BackwardBody>> body;
      Entry entry;                 // the arguments as they came in, detached
      Aliases alias{};             // which of them were one object
      std::vector<uint8_t> grad;   // per Float/Float64 array: grad-enabled
      std::vector<size_t> source;  // per grad-enabled array: its source
      std::vector<uint8_t> kinds;  // per grad-enabled array: 0 Float, 1 Float64
      size_t n_sources = 0;
      std::string function;

      std::vector<detail::Handle> backward(uint32_t k, detail::Handle seed) override {
        std::vector<Float> s32;
        std::vector<Float64> s64;
        detail::inc_ref(seed);
        if (detail::var_type(seed) == ScalarType::Float32)
          s32.push_back(Float::steal(seed));
        else
          s64.push_back(Float64::steal(seed));
        auto [g32, g64] = (*body)(entry, alias, grad, k, s32, s64);
        // The gradients of arrays that shared a node add up.
        std::vector<std::optional<Float>> a32(n_sources);
        std::vector<std::optional<Float64>> a64(n_sources);
        size_t i32 = 0, i64 = 0;
        for (size_t j = 0; j < source.size(); ++j) {
          size_t s = source[j];
          if (kinds[j] == 0 && i32 < g32.size()) {
            const Float& g = g32[i32++];
            if (s < n_sources)
              a32[s] = a32[s] ? *a32[s] + g : g;
          } else if (kinds[j] == 1 && i64 < g64.size()) {
            const Float64& g = g64[i64++];
            if (s < n_sources)
              a64[s] = a64[s] ? *a64[s] + g : g;
          }
        }
        std::vector<detail::Handle> out(n_sources, 0);
        for (size_t s = 0; s < n_sources; ++s) {
          if (a32[s]) {
            out[s] = a32[s]->id();
            detail::inc_ref(out[s]);
          } else if (a64[s]) {
            out[s] = a64[s]->id();
            detail::inc_ref(out[s]);
          }
        }
        return out;
      }

      std::string name() const override { return "frozen function '" + function + "'"; }
    };

    std::shared_ptr<detail::CallBackward> make_backward(const detail::WrittenArgs& written,
                                                        std::span<const detail::AdIndex> sources,
                                                        detail::BackwardCache& cache,
                                                        const std::string& function) override {
      if constexpr (detail::FrozenBackwardBody<F>) {
        throw FreezeError("frozen function '" + function +
                          "': gradients of gradients do not pass through a frozen call's "
                          "backward");
      } else {
        auto b =
            std::make_shared<Backward>(std::apply([](auto&... a) { return Entry(a...); }, args_));
        b->function = function;
        b->alias = aliases();
        b->n_sources = sources.size();
        detail::for_each_float_array(args_, [&](auto& a) {
          detail::AdIndex node = a.ad_index();
          b->grad.push_back(node != 0);
          if (!node)
            return;
          auto it = std::find(sources.begin(), sources.end(), node);
          b->source.push_back(static_cast<size_t>(it - sources.begin()));
          b->kinds.push_back(std::is_same_v<std::remove_cvref_t<decltype(a)>, Float> ? 0 : 1);
        });
        detail::for_each_float_array(b->entry, [](auto& a) { a.set_ad_index(0); });
        if (!cache.frozen) {
          auto made = std::make_shared<Frozen<BackwardBody>>(
              BackwardBody{fn_owner_, written}, FreezeOptions{.name = function + " (backward)"});
          cache.core = made->core_;
          cache.frozen = std::move(made);
        }
        b->body = std::static_pointer_cast<Frozen<BackwardBody>>(cache.frozen);
        return b;
      }
    }

    std::optional<std::conditional_t<std::is_void_v<R>, int, R>> result;

   private:
    void rebuild_in_place(detail::RebuildVisitor& r, const detail::WrittenArgs& written) {
      if constexpr (!std::is_void_v<R>) {
        result.emplace();
        detail::traverse(r, *result);
      }
      // Every argument the recording wrote, in order, whatever this call passed there: an
      // rvalue takes the update (unseen), a const argument updates a scratch copy.
      for_each_written(written, [&](auto& arg) {
        if constexpr (std::is_const_v<std::remove_reference_t<decltype(arg)>>) {
          std::decay_t<decltype(arg)> scratch = arg;
          detail::traverse(r, scratch);
        } else {
          detail::traverse(r, arg);
        }
      });
    }

    // Into copies first, committed only when the whole shape fitted.
    void rebuild_staged(detail::RebuildVisitor& r, const detail::WrittenArgs& written) {
      std::optional<std::conditional_t<std::is_void_v<R>, int, R>> fresh;
      if constexpr (!std::is_void_v<R>) {
        fresh.emplace();
        detail::traverse(r, *fresh);
      }
      std::tuple<std::optional<std::decay_t<A>>...> staging;
      [&]<size_t... I>(std::index_sequence<I...>) {
        (
            [&] {
              if (!written[I])
                return;
              auto& copy = std::get<I>(staging).emplace(std::get<I>(args_));
              detail::traverse(r, copy);
            }(),
            ...);
      }
      (std::index_sequence_for<A...>());
      r.finish();
      result = std::move(fresh);
      [&]<size_t... I>(std::index_sequence<I...>) {
        (
            [&] {
              auto& arg = std::get<I>(args_);
              if constexpr (!std::is_const_v<std::remove_reference_t<decltype(arg)>>)
                if (written[I])
                  arg = std::move(*std::get<I>(staging));
            }(),
            ...);
      }
      (std::index_sequence_for<A...>());
    }

    // A copy stands in for an argument: an lvalue where the caller passed one (so a body
    // taking T& binds to the copy), an rvalue otherwise.
    template <class Arg, class C>
    static decltype(auto) forward_copy(C& c) {
      if constexpr (std::is_lvalue_reference_v<Arg>)
        return static_cast<C&>(c);
      else
        return std::move(c);
    }

    // The copy standing in for argument I: that of argument alias[I] (of the same type).
    template <size_t I>
    static auto& copy_for(Entry& copies, const Aliases& alias) {
      using T = std::tuple_element_t<I, Entry>;
      T* chosen = &std::get<I>(copies);
      [&]<size_t... J>(std::index_sequence<J...>) {
        (
            [&] {
              if constexpr (std::is_same_v<std::tuple_element_t<J, Entry>, T>)
                if (alias[I] == J)
                  chosen = &std::get<J>(copies);
            }(),
            ...);
      }
      (std::make_index_sequence<I>());
      return *chosen;
    }

    // Calls fn(arg) for each argument the recording wrote, in order.
    template <class Fn>
    void for_each_written(const detail::WrittenArgs& written, Fn&& fn) {
      [&]<size_t... I>(std::index_sequence<I...>) {
        (
            [&] {
              if (written[I])
                fn(std::get<I>(args_));
            }(),
            ...);
      }
      (std::index_sequence_for<A...>());
    }

    // Calls fn(i, arg) for each argument the body could write: any non-const one. An rvalue
    // counts too: a body taking it by forwarding reference writes it, and a later call of the
    // same kind may pass an lvalue there that must be updated.
    template <class Fn>
    void for_each_writable(Fn&& fn) {
      [&]<size_t... I>(std::index_sequence<I...>) {
        (
            [&] {
              if constexpr (!std::is_const_v<
                                std::remove_reference_t<std::tuple_element_t<I, std::tuple<A...>>>>)
                fn(I, std::get<I>(args_));
            }(),
            ...);
      }
      (std::index_sequence_for<A...>());
    }

    template <class Tuple, size_t... I>
    static void sink_written(detail::SinkVisitor& sink, Tuple& t,
                             const detail::WrittenArgs& written, std::index_sequence<I...>) {
      (
          [&] {
            if (written[I]) {
              sink.owner = static_cast<int32_t>(I);
              detail::traverse(sink, std::get<I>(t));
            }
          }(),
          ...);
    }

    template <size_t... I>
    void describe_args(detail::PathVisitor& p, const detail::WrittenArgs* written_only,
                       std::index_sequence<I...>) {
      (
          [&] {
            if (written_only && !(*written_only)[I])
              return;
            p.root("args[" + std::to_string(I) + "]");
            detail::traverse(p, std::get<I>(args_));
          }(),
          ...);
    }

    F& fn_;
    std::shared_ptr<F> fn_owner_;  // a call's backward keeps the callable
    std::tuple<A&...> args_;
    std::vector<detail::ScanVisitor> before_;
    std::optional<std::tuple<std::decay_t<A>...>> copies_;
  };

  template <class G>
  friend class Frozen;  // a call's backward is a Frozen of another callable: its core is saved

  std::shared_ptr<F> fn_;
  std::shared_ptr<detail::FreezeCore> core_;
};

/// Freezes `fn`: see Frozen and docs/freeze.md.
template <class F>
Frozen<std::decay_t<F>> freeze(F&& fn, FreezeOptions options = {}) {
  return Frozen<std::decay_t<F>>(std::forward<F>(fn), std::move(options));
}

}  // namespace ff
