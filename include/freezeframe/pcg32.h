// ff::PCG32: a random number generator whose state lives in arrays, so a frozen function that
// takes it by reference advances it exactly as a traced call would.
#pragma once

#include <cstdint>

#include "freezeframe/array.h"
#include "freezeframe/traverse.h"

namespace ff {

/// PCG32 (O'Neill's pcg32: XSH RR output, 64-bit LCG state) with one stream per lane: lane i
/// draws the reference generator's sequence for stream `initseq + i`. Traversable like an
/// FF_STRUCT (fields `state` and `inc`).
struct PCG32 {
  static constexpr uint64_t kMultiplier = 6364136223846793005ull;

  UInt64 state;
  UInt64 inc;

  /// `size` lanes, seeded as pcg32_srandom_r(initstate, initseq + i) in lane i.
  void seed(const Size& size, uint64_t initstate = 0x853c49e6748fea9bull,
            uint64_t initseq = 0xda3e39cb94b95bdbull) {
    UInt64 lane = arange<UInt64>(size);
    inc = ((lane + initseq) << uint64_t{1}) | uint64_t{1};
    state = zeros<UInt64>(size);
    step();
    state = state + initstate;
    step();
  }

  /// The next 32 random bits of every lane; advances the state.
  UInt32 next_uint32() {
    UInt64 old = state;
    step();
    UInt32 xorshifted = cast<UInt32>(((old >> uint64_t{18}) ^ old) >> uint64_t{27});
    UInt32 rot = cast<UInt32>(old >> uint64_t{59});
    return (xorshifted >> rot) | (xorshifted << ((0u - rot) & 31u));
  }

  /// A float in [0, 1): (next_uint32() >> 9) * 2^-23, as in Dr.Jit; advances the state.
  Float next_float() { return cast<Float>(next_uint32() >> 9u) * (1.f / 8388608.f); }

 private:
  void step() { state = state * kMultiplier + inc; }
};

template <>
struct StructFields<PCG32> {
  static constexpr const char* kName = "ff::PCG32";
  static constexpr size_t kCount = 2;

  template <class S, class F>
  static void for_each(S& s, F&& fn) {
    fn("state", s.state);
    fn("inc", s.inc);
  }
};

}  // namespace ff
