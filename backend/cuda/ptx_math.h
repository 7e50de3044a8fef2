// The math routines in PTX for Float32 and Float64, emitted inline: exp, log, sin and cos here
// (ptx_math.cpp), the other transcendental opcodes in ptx_math_more.cpp (methods and measured
// bounds: docs/math.md).
//
// PTX has no double-precision transcendentals and its single-precision `.approx` instructions
// are a few ulp off, so both widths use range reduction plus a polynomial evaluated with
// correctly rounded instructions only (add/mul/fma/div `.rn`, conversions, integer ops): the
// result of every routine is then a fixed function of its input, the same on every GPU, and
// the bounds below hold everywhere (tests/cuda_codegen_test.cpp runs the emitted PTX through a
// reference interpreter against a long double reference; docs/cuda.md states the method).
//
//   exp: x = k ln2 + r (Cody-Waite, two-part ln2), Taylor polynomial of degree 7 (f32) or 13
//        (f64) on |r| <= ln2/2, times 2^k applied in two steps (subnormal results round once).
//   log: x = 2^e m with m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f),
//        log(m) = f - s (f - R(s^2)) (the atanh series), plus e ln2 in two parts.
//   sin, cos: x = k pi/2 + r with a three-part pi/2 (|x| < 2^17 for f32, 2^30 for f64), else
//        Payne-Hanek reduction against a 1,472-bit table of 2/pi in 64-bit integer arithmetic;
//        Taylor polynomials for sin and cos on |r| <= pi/4, chosen and signed by the quadrant.
//
// Stated bounds (ulp of the correctly rounded result, every finite input): exp, log, sin and
// cos within 2 ulp in Float32 and in Float64; special values (NaN, +-inf, +-0, subnormals)
// follow C's <cmath>.
#pragma once

#include <string>

#include "backend/cuda/ptx_writer.h"
#include "backend/ir/kernel_ir.h"

namespace ff::cuda_backend {

/// The error bound of exp, log, sin and cos, in ulp (what the tests check).
inline constexpr double kMathUlpBound = 2.0;

/// Emits op(x) for any unary transcendental opcode (Exp ... Cbrt) and t in {Float32, Float64};
/// `x` is a register of t's class. Returns the result register.
std::string emit_math(PtxWriter& w, IrOp op, ScalarType t, const std::string& x);

/// The routines of the transcendental opcodes after the first four (ptx_math_more.cpp): op(x),
/// or op(x, y) for Atan2 (x = y coordinate, y = x coordinate, as the IR's operands) and Pow,
/// in type t (x and y registers of t's class). Returns the result register.
std::string emit_math2(PtxWriter& w, IrOp op, ScalarType t, const std::string& x,
                       const std::string& y = {});

/// The module-scope tables the routines of `ir`'s instructions read (the 2/pi table for sin,
/// cos and tan, the erfc Taylor table for erf), placed before the entry; "" for none.
std::string ptx_math_globals(const KernelIR& ir);

/// The erfc Taylor table's declaration (ptx_math_more.cpp).
std::string ptx_erfc_table();

/// Every table ptx_math_globals(ir) may declare (for modules that combine kernels).
std::string ptx_math_globals();

/// The table's words: bit i of the concatenation (most significant first) is bit i - 63 of the
/// binary fraction of 2/pi (bit 1 = 2^-1); word 0 is zero so windows may start before the point.
inline constexpr int kTwoOverPiWords = 24;
extern const uint64_t kTwoOverPi[kTwoOverPiWords];

}  // namespace ff::cuda_backend
