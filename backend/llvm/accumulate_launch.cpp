// Accumulating launches (accumulate_launch.h): the strategy, and the privatised run.
#include "backend/llvm/accumulate_launch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>

#include "backend/ir/ir_analysis.h"
#include "backend/llvm/launch_plan.h"
#include "backend/llvm/thread_pool.h"

namespace ff::llvm_backend {
namespace {

constexpr size_t kCopyAlign = 64;  // each private copy on its own cache lines

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

// The largest length any accumulation of `t` bounds its buffer to, from the launch's words.
uint64_t target_length(const AccumulateTarget& t, std::span<const uint64_t> args) {
  uint64_t n = 0;
  for (uint32_t b : t.bounds)
    n = std::max(n, args[b]);
  return n;
}

// Bytes that target `t` of length `n` takes in a private copy: whole cache lines, so the next
// target's part starts on its own.
size_t copy_bytes_of(const AccumulateTarget& t, uint64_t n) {
  return round_up(n * size_of(t.type), kCopyAlign);
}

// A scratch area per launching thread for the private copies, grown as needed and kept: the
// launches of a replay loop reuse it.
std::byte* scratch(size_t bytes) {
  struct Deleter {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{kCopyAlign}); }
  };

  thread_local std::unique_ptr<std::byte[], Deleter> area;
  thread_local size_t capacity = 0;
  if (bytes > capacity) {
    area.reset();
    capacity = 0;
    area.reset(static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{kCopyAlign})));
    capacity = bytes;
  }
  return area.get();
}

// The merge of private copies and their starting values, with the kernels' arithmetic
// (llvm_codegen.cpp, emit_combine): integers wrap, floats round to nearest, float Min/Max
// ignore NaN and count -0 below +0.
template <class T>
T combine(ReduceOp op, T old, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    bool take = false;
    if (op == ReduceOp::Add)
      return old + v;
    if (op == ReduceOp::Mul)
      return old * v;
    if (!std::isnan(v)) {
      bool tie = v == old && std::signbit(v) != std::signbit(old);
      take = std::isnan(old) || (op == ReduceOp::Min ? v < old || (tie && std::signbit(v))
                                                     : v > old || (tie && !std::signbit(v)));
    }
    return take ? v : old;
  } else {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case ReduceOp::Add:
        return static_cast<T>(static_cast<U>(old) + static_cast<U>(v));
      case ReduceOp::Mul:
        return static_cast<T>(static_cast<U>(old) * static_cast<U>(v));
      case ReduceOp::Min:
        return std::min(old, v);
      case ReduceOp::Max:
        return std::max(old, v);
      case ReduceOp::And:
        return old & v;
      case ReduceOp::Or:
        return old | v;
    }
    return old;
  }
}

template <class T>
void merge_into(ReduceOp op, void* dst, const void* src, size_t n) {
  auto* d = static_cast<T*>(dst);
  const auto* s = static_cast<const T*>(src);
  if (op == ReduceOp::Add) {  // the common case, kept a plain loop that vectorises
    for (size_t i = 0; i < n; ++i)
      d[i] = combine(ReduceOp::Add, d[i], s[i]);
    return;
  }
  for (size_t i = 0; i < n; ++i)
    d[i] = combine(op, d[i], s[i]);
}

template <class T>
void fill_identity(ReduceOp op, void* dst, size_t n) {
  std::fill_n(static_cast<T*>(dst), n, ff::detail::reduce_identity<T>(op));
}

// Calls f.template operator()<T>() with T the C++ type of `t` (not Bool: the validator
// refuses Bool accumulations).
template <class F>
void with_type(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::Int32:
      return f.template operator()<int32_t>();
    case ScalarType::UInt32:
      return f.template operator()<uint32_t>();
    case ScalarType::Int64:
      return f.template operator()<int64_t>();
    case ScalarType::UInt64:
      return f.template operator()<uint64_t>();
    case ScalarType::Float32:
      return f.template operator()<float>();
    case ScalarType::Float64:
      return f.template operator()<double>();
    case ScalarType::Bool:
      break;
  }
}

// A private copy's starting values: each target's part holds its op's identity.
void fill_identities(const AccumulateInfo& info, const std::vector<size_t>& offsets,
                     const std::vector<uint64_t>& lengths, std::byte* copy) {
  for (size_t t = 0; t < info.targets.size(); ++t) {
    const AccumulateTarget& target = info.targets[t];
    std::byte* at = copy + offsets[t];
    bool zeros =
        (target.op == ReduceOp::Add && !is_float(target.type)) || target.op == ReduceOp::Or;
    if (zeros)
      std::memset(at, 0, copy_bytes_of(target, lengths[t]));
    else
      with_type(target.type, [&]<class T>() { fill_identity<T>(target.op, at, lengths[t]); });
  }
}

struct PrivateRun {
  KernelFn fn;
  const uint64_t* part_args;  // n_parts arrays of `stride` words
  size_t stride;
  std::byte* copies;  // part p >= 1: its copy at copies + (p - 1) * copy_bytes
  size_t copy_bytes;
  size_t size, part;
  const AccumulateInfo* info;
  const std::vector<size_t>& offsets;
  const std::vector<uint64_t>& lengths;
};

// Whether the launch's targets may be kept apart per part (accessed only by accumulations,
// bound to no other parameter, small), and the work the other threads take from the calling
// thread pays for the split and the copies.
bool private_pays(const AccumulateInfo& info, std::span<const uint64_t> args, size_t size,
                  unsigned n_threads, uint64_t work_per_elem, const AccumulateCosts& costs) {
  if (!info.privatizable || !writes_unaliased(info, args))
    return false;  // another parameter may read or write a target
  uint64_t bytes = 0;
  for (const AccumulateTarget& t : info.targets) {
    uint64_t n = target_length(t, args);
    if (n > kPrivateMaxBytes)  // too large whatever its type (and n * size cannot overflow)
      return false;
    bytes += copy_bytes_of(t, n);
  }
  if (bytes > kPrivateMaxBytes)
    return false;
  // In doubles: work_per_elem * size may pass 2^64 for loop kernels.
  double taken = double(work_per_elem) * double(size) * double(n_threads - 1) / double(n_threads);
  double cost = double(costs.private_min_work) +
                double(bytes) * double(n_threads - 1) * double(costs.private_work_per_byte);
  return taken >= cost;
}

}  // namespace

bool writes_unaliased(const AccumulateInfo& info, std::span<const uint64_t> args) {
  auto is_target = [&](size_t p) {
    return std::any_of(info.targets.begin(), info.targets.end(),
                       [&](const AccumulateTarget& t) { return t.param == p; });
  };
  for (uint32_t w : info.written)
    for (size_t p = 0; p < args.size(); ++p)
      if (p != w && args[p] == args[w] && !(is_target(w) && is_target(p)))
        return false;
  return true;
}

AccumulateInfo accumulate_info(const KernelIR& ir) {
  AccumulateInfo info;
  std::vector<ParamSummary> uses = param_summary(ir);
  for (uint32_t p = 0; p < uses.size(); ++p)
    if (uses[p].writes())
      info.written.push_back(p);
  bool one_op = true;
  for_each_instr(ir, [&](uint32_t, const IrInstr& in) {
    for_each_param(in, [&](const IrParamUse& u) {
      bool inc = u.access == ParamAccess::IndexedIncrement;
      if (u.access != ParamAccess::IndexedAccumulate && !inc)
        return;
      info.increments = info.increments || inc;
      ReduceOp op = op_facts(in.op).reduce;
      auto it = std::find_if(info.targets.begin(), info.targets.end(),
                             [&](const AccumulateTarget& t) { return t.param == u.param; });
      if (it == info.targets.end())
        it = info.targets.insert(info.targets.end(), AccumulateTarget{u.param, in.type, op, {}});
      one_op = one_op && it->op == op;
      if (std::find(it->bounds.begin(), it->bounds.end(), u.bound) == it->bounds.end())
        it->bounds.push_back(u.bound);
      ++info.n_accumulations;
    });
  });
  info.privatizable =
      one_op && std::all_of(info.targets.begin(), info.targets.end(), [&](const auto& t) {
        return uses[t.param].accesses == (1u << static_cast<int>(ParamAccess::IndexedAccumulate));
      });
  return info;
}

AccumulateStrategy choose_accumulate(const AccumulateInfo& info, std::span<const uint64_t> args,
                                     size_t size, size_t n_blocks, unsigned n_threads,
                                     uint64_t work_per_elem, const AccumulateCosts& costs) {
  if (n_blocks <= 1 || n_threads <= 1 || info.increments)
    return AccumulateStrategy::Alone;
  if (private_pays(info, args, size, n_threads, work_per_elem, costs))
    return AccumulateStrategy::Private;
  // Per element: work_per_elem alone, against (work_per_elem + atomics) / n_threads split.
  uint64_t atomics = costs.atomic_accumulate_work * info.n_accumulations;
  bool split_pays = work_per_elem * (n_threads - 1) > atomics;
  return split_pays ? AccumulateStrategy::Atomic : AccumulateStrategy::Alone;
}

void run_privatized(ThreadPool& pool, KernelFn fn, const AccumulateInfo& info,
                    std::span<const uint64_t> args, size_t size, bool wake) {
  const size_t n_targets = info.targets.size();
  std::vector<size_t> offsets(n_targets);
  std::vector<uint64_t> lengths(n_targets);
  size_t copy_bytes = 0;
  for (size_t t = 0; t < n_targets; ++t) {
    lengths[t] = target_length(info.targets[t], args);
    offsets[t] = copy_bytes;
    copy_bytes += copy_bytes_of(info.targets[t], lengths[t]);
  }
  // One part per thread, each a whole number of kBlockAlign lanes (only the last has a tail).
  const size_t n_threads = pool.n_threads();
  const size_t part = round_up((size + n_threads - 1) / n_threads, kBlockAlign);
  const size_t n_parts = (size + part - 1) / part;
  std::byte* copies = scratch(std::max<size_t>(copy_bytes * (n_parts - 1), 1));

  // Each part's arguments: the launch's, its targets pointing at its copy, then the mode word.
  const size_t stride = args.size() + 1;
  thread_local std::vector<uint64_t> part_args;
  part_args.resize(stride * n_parts);
  for (size_t p = 0; p < n_parts; ++p) {
    uint64_t* a = part_args.data() + p * stride;
    std::copy(args.begin(), args.end(), a);
    // private_pays() checked that no written parameter is aliased; a copy is no parameter's
    // buffer.
    a[args.size()] = static_cast<uint64_t>(AccumulateMode::Exclusive) | kWritesUnaliased;
    if (p == 0)
      continue;
    for (size_t t = 0; t < n_targets; ++t)
      a[info.targets[t].param] =
          reinterpret_cast<uint64_t>(copies + (p - 1) * copy_bytes + offsets[t]);
  }

  PrivateRun run{fn,    part_args.data(), stride, copies, copy_bytes, size, part,
                 &info, offsets,          lengths};
  pool.run(
      n_parts,
      [](void* c, size_t p) {
        auto& r = *static_cast<PrivateRun*>(c);
        if (p > 0)  // filled here, by the thread that then works on it
          fill_identities(*r.info, r.offsets, r.lengths, r.copies + (p - 1) * r.copy_bytes);
        uint64_t begin = p * r.part;
        r.fn(begin, std::min<uint64_t>(begin + r.part, r.size), r.part_args + p * r.stride);
      },
      &run, wake);

  // Merge: each target gains every copy's partial sums. Split over the pool by element ranges
  // when there is enough to add (a few thousand elements is less than waking a thread).
  constexpr size_t kMergeChunk = 16384;
  size_t total = 0;
  for (uint64_t n : lengths)
    total += n;
  auto merge = [&](size_t lo, size_t hi) {  // elements [lo, hi) of the targets laid end to end
    size_t base = 0;
    for (size_t t = 0; t < n_targets; ++t) {
      size_t n = lengths[t], b = std::max(lo, base), e = std::min(hi, base + n);
      if (b < e) {
        ScalarType ty = info.targets[t].type;
        size_t elem = size_of(ty);
        auto* dst = reinterpret_cast<std::byte*>(args[info.targets[t].param]) + (b - base) * elem;
        ReduceOp op = info.targets[t].op;
        for (size_t p = 1; p < n_parts; ++p) {
          const std::byte* src = copies + (p - 1) * copy_bytes + offsets[t] + (b - base) * elem;
          with_type(ty, [&]<class T>() { merge_into<T>(op, dst, src, e - b); });
        }
      }
      base += n;
    }
  };
  if (total * (n_parts - 1) <= kMergeChunk)
    merge(0, total);
  else
    pool.parallel_for(
        (total + kMergeChunk - 1) / kMergeChunk,
        [&](size_t c) { merge(c * kMergeChunk, std::min(total, (c + 1) * kMergeChunk)); }, wake);
}

}  // namespace ff::llvm_backend
