// Small recordings that together use every op kind and IR opcode, guards, constants, aliasing
// and a capture: the tool tests' files, the damaged-file tests' seeds and the fuzzer's corpus.
#pragma once

#include <freezeframe/freezeframe.h>

#include <array>
#include <string>
#include <utility>
#include <vector>

namespace ff_samples {

/// (name, recording) pairs, recorded on the current stack (call ff::init("llvm") first).
inline std::vector<std::pair<std::string, ff::Recording>> sample_recordings() {
  using ff::AnyArray;
  using ff::Float;
  using ff::UInt32;
  Float x = Float::from({0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f});
  UInt32 i = UInt32::from({1u, 0u, 3u, 2u, 7u, 6u, 5u, 4u});
  ff::Int32 n = ff::Int32::from({3, -4, 5, 8, -1, 0, 2, 9});
  std::vector<std::pair<std::string, ff::Recording>> out;
  out.emplace_back("chain", ff::record({x}, [&] {
                     Float y = ff::sqrt(x * 2.f + 1.f);
                     return std::vector<AnyArray>{y, ff::exp(-y)};
                   }));
  out.emplace_back("gather", ff::record({x, i}, [&] {
                     UInt32 idx = ff::arange<UInt32>(ff::width(x) - 1);
                     Float d = ff::gather<Float>(x, idx + 1u) - ff::gather<Float>(x, idx);
                     return std::vector<AnyArray>{d, ff::sum(d), ff::prefix_sum(x)};
                   }));
  out.emplace_back("scatter", ff::record({x, i}, [&] {
                     Float t = ff::zeros<Float>(ff::width(x));
                     ff::scatter(t, x * 2.f, i);
                     ff::scatter_add(t, 1.f, i % 3u);
                     Float c = Float::from({1.f, 2.f, 3.f});  // a host constant
                     return std::vector<AnyArray>{t, c + ff::max_reduce(x)};
                   }));
  out.emplace_back("compress", ff::record({x, n}, [&] {
                     UInt32 hits = ff::compress(x > 0.25f);
                     Float picked = ff::gather<Float>(x, hits);
                     if (hits.size() > 2)  // a guard after the compress
                       picked = picked * 2.f;
                     return std::vector<AnyArray>{picked, x, ff::mean(picked), ff::prod(n % 3 + 2)};
                   }));
  out.emplace_back(
      "aliased", ff::record({x, x}, [&] {
        Float y = x;
        ff::scatter(y, 9.f, UInt32::from({0u}));  // into an input: copy-on-write
        return std::vector<AnyArray>{y, x + 1.f, ff::full<Float>(3.f, ff::width(x) / 2)};
      }));
  out.emplace_back("math", ff::record({x, i}, [&] {  // every math opcode after the first 41
                     Float s = x * 0.1f;             // inside (-1, 1)
                     Float a = ff::tan(s) + ff::asin(s) + ff::acos(s) + ff::atan(x) + ff::sinh(s) +
                               ff::cosh(s) + ff::tanh(x) + ff::asinh(x) + ff::acosh(x + 1.f) +
                               ff::atanh(s) + ff::exp2(s) + ff::log2(x) + ff::erf(s) + ff::cbrt(x);
                     Float b = ff::round(x) + ff::trunc(x) + ff::atan2(x, s) + ff::pow(x, s) +
                               ff::copysign(x, -s) + ff::rsqrt(x) + ff::rcp(x) +
                               ff::clamp(x, 1.f, 6.f) + ff::lerp(x, s, 0.25f);
                     UInt32 c = ff::popcnt(i) + ff::clz(i) + ff::ctz(i);
                     return std::vector<AnyArray>{a, b, c};
                   }));
  out.emplace_back("scatter_kinds", ff::record({x, i}, [&] {  // every scatter-reduction kind
                     UInt32 bin = i % 3u;
                     Float lo = ff::full<Float>(100.f, 3), hi = ff::zeros<Float>(3);
                     Float prod = ff::full<Float>(1.f, 3);
                     ff::scatter_reduce(ff::ReduceOp::Min, lo, x, bin);
                     ff::scatter_reduce(ff::ReduceOp::Max, hi, x, bin);
                     ff::scatter_reduce(ff::ReduceOp::Mul, prod, x, bin);
                     UInt32 bits = ff::zeros<UInt32>(3), all = ff::full<UInt32>(~0u, 3);
                     ff::scatter_reduce(ff::ReduceOp::Or, bits, i + 1u, bin);
                     ff::scatter_reduce(ff::ReduceOp::And, all, i + 1u, bin);
                     UInt32 counter = ff::zeros<UInt32>(1);
                     UInt32 slot = ff::scatter_inc(counter, UInt32(0u), x > 3.f);
                     Float queue = ff::zeros<Float>(ff::width(x));
                     ff::scatter(queue, x, slot, x > 3.f);
                     return std::vector<AnyArray>{lo, hi, prod, bits, all, counter, queue};
                   }));
  out.emplace_back("control_flow", ff::record({x, i}, [&] {  // a loop, a branch and a call
                     UInt32 visits = ff::zeros<UInt32>(4);
                     auto [y, k] = ff::while_loop(
                         std::make_tuple(x, ff::zeros<UInt32>(ff::width(x))),
                         [](const Float& v, const UInt32&) { return v > 1.f; },
                         [&](Float& v, UInt32& trips) {
                           v = v * 0.5f;
                           trips += 1u;
                           ff::scatter_add(visits, UInt32(1u), trips % 4u);
                         },
                         ff::LoopOptions{.name = "halve"});  // recorder-dump shows the name
                     Float z = ff::if_stmt(
                         std::make_tuple(y), k % 2u == 0u, [](const Float& v) { return v + 10.f; },
                         [](const Float& v) { return v - 10.f; });
                     std::array<Float (*)(const Float&), 3> targets = {
                         [](const Float& v) { return v * 2.f; },
                         [](const Float& v) { return ff::sqrt(ff::abs(v)); },
                         [](const Float& v) { return -v; }};
                     Float w = ff::switch_(i % 4u, targets, z);
                     return std::vector<AnyArray>{w, k, visits};
                   }));
  return out;
}

}  // namespace ff_samples
