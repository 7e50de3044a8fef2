// The Float32 math functions after the first four (tan ... cbrt, atan2, pow) in PTX: evaluated
// in double and rounded once to float. Double carries 29 bits more than float, so a few double
// ulp of error in the composition below (each part correctly rounded or within 2 double ulp)
// stays far under half a float ulp, and the float result is within about 0.5 ulp of exact
// (docs/math.md states what the interpreter measured). The compositions avoid the cancellations
// double would not hide: sinh and tanh of small arguments use their Taylor series, asinh,
// acosh and atanh go through an accurate log1p, atan reduces its argument twice by the
// half-angle formula before its series.
#include <cmath>
#include <vector>

#include "backend/cuda/ptx_math.h"

namespace ff::cuda_backend {
namespace {

constexpr double kPi = 3.141592653589793;
constexpr double kPio2 = 1.5707963267948966;
constexpr double kLn2 = 0.6931471805599453;
constexpr double kLog2e = 1.4426950408889634;
constexpr double kTwoOverSqrtPi = 1.1283791670955126;

class Wide {
 public:
  explicit Wide(PtxWriter& w) : w_(w) {}

  std::string d() { return w_.reg(RegClass::F64); }

  std::string p() { return w_.reg(RegClass::Pred); }

  std::string k(double v) { return ptx_f64(v); }

  std::string bin(const char* op, const std::string& a, const std::string& b) {
    std::string r = d();
    w_.op("{}.rn.f64 {}, {}, {}", op, r, a, b);
    return r;
  }

  std::string add(const std::string& a, const std::string& b) { return bin("add", a, b); }

  std::string sub(const std::string& a, const std::string& b) { return bin("sub", a, b); }

  std::string mul(const std::string& a, const std::string& b) { return bin("mul", a, b); }

  std::string div(const std::string& a, const std::string& b) { return bin("div", a, b); }

  std::string sqrt(const std::string& a) {
    std::string r = d();
    w_.op("sqrt.rn.f64 {}, {}", r, a);
    return r;
  }

  std::string setp(const char* cmp, const std::string& a, const std::string& b) {
    std::string r = p();
    w_.op("setp.{}.f64 {}, {}, {}", cmp, r, a, b);
    return r;
  }

  std::string select(const std::string& pred, const std::string& a, const std::string& b) {
    std::string r = d();
    w_.op("selp.f64 {}, {}, {}, {}", r, a, b, pred);
    return r;
  }

  // The sign bit of `from` on |x| (bits only).
  std::string copysign(const std::string& x, const std::string& from) {
    std::string a = w_.reg(RegClass::B64), b = w_.reg(RegClass::B64), r = d();
    w_.op("mov.b64 {}, {}", a, x);
    w_.op("mov.b64 {}, {}", b, from);
    w_.op("and.b64 {}, {}, 0x7FFFFFFFFFFFFFFF", a, a);
    w_.op("and.b64 {}, {}, 0x8000000000000000", b, b);
    w_.op("or.b64 {}, {}, {}", a, a, b);
    w_.op("mov.b64 {}, {}", r, a);
    return r;
  }

  std::string fabs(const std::string& x) { return copysign(x, k(1.0)); }

  // True when x's sign bit is set (-0 included).
  std::string sign_set(const std::string& x) {
    std::string b = w_.reg(RegClass::B64), r = p();
    w_.op("mov.b64 {}, {}", b, x);
    w_.op("setp.lt.s64 {}, {}, 0", r, b);
    return r;
  }

  // z (... (c[n-1] z + c[n-2]) ...) + c[0], fma.rn.
  std::string horner(const std::string& z, const std::vector<double>& c) {
    std::string acc = d();
    w_.op("mov.f64 {}, {}", acc, k(c.back()));
    for (size_t i = c.size() - 1; i-- > 0;) {
      std::string q = d();
      w_.op("fma.rn.f64 {}, {}, {}, {}", q, acc, z, k(c[i]));
      acc = q;
    }
    return acc;
  }

  std::string exp(const std::string& x) { return emit_math(w_, IrOp::Exp, ScalarType::Float64, x); }

  std::string log(const std::string& x) { return emit_math(w_, IrOp::Log, ScalarType::Float64, x); }

  // log(1 + t) without losing t's digits: with u = 1 + t rounded, log(u) * t / (u - 1) is
  // within a few ulp (Goldberg), and u == 1 means log1p(t) == t to double precision.
  std::string log1p(const std::string& t) {
    std::string u = add(k(1.0), t);
    std::string ratio = mul(log(u), div(t, sub(u, k(1.0))));
    std::string r = select(setp("eq", u, k(1.0)), t, ratio);
    return select(setp("eq", t, k(INFINITY)), t, r);  // inf / inf would be NaN
  }

  // sinh(a) for 0 <= a < 0.5: a (1 + a^2/3! + ... + a^16/17!).
  std::string sinh_series(const std::string& a) {
    std::vector<double> c;
    double f = 1;
    for (int n = 1; n <= 17; n += 2) {
      c.push_back(1.0 / f);
      f *= (n + 1.0) * (n + 2.0);
    }
    return mul(a, horner(mul(a, a), c));
  }

  // atan(x) in double: |x| > 1 as pi/2 - atan(1/|x|), then twice t -> t / (1 + sqrt(1 + t^2))
  // (atan t = 2 atan of the result) down to |t| <= tan(pi/16), then the series to t^27.
  std::string atan(const std::string& x) {
    std::string a = fabs(x);
    std::string inv = setp("gt", a, k(1.0));
    std::string t = select(inv, div(k(1.0), a), a);
    for (int h = 0; h < 2; ++h)
      t = div(t, add(k(1.0), sqrt(add(k(1.0), mul(t, t)))));
    std::vector<double> c;
    for (int n = 0; n < 14; ++n)
      c.push_back((n % 2 ? -1.0 : 1.0) / (2 * n + 1));
    std::string r = mul(k(4.0), mul(t, horner(mul(t, t), c)));
    r = select(inv, sub(k(kPio2), r), r);
    return copysign(r, x);
  }

  std::string unary(IrOp op, const std::string& x) {
    switch (op) {
      case IrOp::Tan: {
        std::string s = emit_math(w_, IrOp::Sin, ScalarType::Float64, x);
        std::string c = emit_math(w_, IrOp::Cos, ScalarType::Float64, x);
        return div(s, c);
      }
      case IrOp::Asin:  // atan(x / sqrt((1 - x)(1 + x))): 1 - x and 1 + x are exact
        return atan(div(x, sqrt(mul(sub(k(1.0), x), add(k(1.0), x)))));
      case IrOp::Acos:
        return mul(k(2.0), atan(sqrt(div(sub(k(1.0), x), add(k(1.0), x)))));
      case IrOp::Atan:
        return atan(x);
      case IrOp::Sinh: {
        std::string a = fabs(x), e = exp(a);
        std::string big = mul(k(0.5), sub(e, div(k(1.0), e)));
        return copysign(select(setp("lt", a, k(0.5)), sinh_series(a), big), x);
      }
      case IrOp::Cosh: {
        std::string e = exp(fabs(x));
        return mul(k(0.5), add(e, div(k(1.0), e)));
      }
      case IrOp::Tanh: {
        std::string a = fabs(x), e = exp(a), e2 = exp(mul(k(2.0), a));
        std::string small = div(sinh_series(a), mul(k(0.5), add(e, div(k(1.0), e))));
        std::string big = sub(k(1.0), div(k(2.0), add(e2, k(1.0))));
        return copysign(select(setp("lt", a, k(0.5)), small, big), x);
      }
      case IrOp::Asinh: {  // log1p(a + a^2 / (1 + sqrt(1 + a^2)))
        std::string a = fabs(x), z = mul(a, a);
        std::string t = add(a, div(z, add(k(1.0), sqrt(add(k(1.0), z)))));
        std::string r = select(setp("eq", a, k(INFINITY)), a, log1p(t));
        return copysign(r, x);
      }
      case IrOp::Acosh: {  // log1p(t + sqrt(t (t + 2))), t = x - 1 (exact); NaN below 1
        std::string t = sub(x, k(1.0));
        std::string r = log1p(add(t, sqrt(mul(t, add(t, k(2.0))))));
        return select(setp("lt", x, k(1.0)), k(NAN), r);
      }
      case IrOp::Atanh: {  // log1p(2a / (1 - a)) / 2
        std::string a = fabs(x);
        std::string r = mul(k(0.5), log1p(div(mul(k(2.0), a), sub(k(1.0), a))));
        return copysign(r, x);
      }
      case IrOp::Exp2: {
        // 2^n exp(f ln2) with n = rint(x), f = x - n (exact): integers give exact powers of
        // two. x is clamped first (float results are 0 or inf beyond +-200); NaN stays.
        std::string xc = d(), n = d(), f = d();
        w_.op("max.f64 {}, {}, {}", xc, x, k(-200.0));
        w_.op("min.f64 {}, {}, {}", xc, xc, k(200.0));
        w_.op("cvt.rni.f64.f64 {}, {}", n, xc);
        w_.op("sub.rn.f64 {}, {}, {}", f, xc, n);
        std::string ni = w_.reg(RegClass::B32), e = w_.reg(RegClass::B64), scale = d();
        w_.op("cvt.rzi.s32.f64 {}, {}", ni, n);
        w_.op("add.s32 {}, {}, 1023", ni, ni);
        w_.op("cvt.u64.u32 {}, {}", e, ni);
        w_.op("shl.b64 {}, {}, 52", e, e);
        w_.op("mov.b64 {}, {}", scale, e);
        std::string r = mul(exp(mul(f, k(kLn2))), scale);
        return select(setp("nan", x, x), x, r);
      }
      case IrOp::Log2:
        return mul(log(x), k(kLog2e));
      case IrOp::Erf: {
        // The series 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1)) to n = 75 for |x| < 4;
        // beyond, erf rounds to +-1 in float (erfc(3.92) < 2^-25).
        std::string a = fabs(x);
        std::vector<double> c;
        double f = 1;
        for (int n = 0; n <= 75; ++n) {
          if (n > 0)
            f *= n;
          c.push_back((n % 2 ? -kTwoOverSqrtPi : kTwoOverSqrtPi) / (f * (2 * n + 1)));
        }
        std::string series = mul(a, horner(mul(a, a), c));
        std::string r = select(setp("lt", a, k(4.0)), series, k(1.0));
        r = select(setp("nan", x, x), x, r);
        return copysign(r, x);
      }
      case IrOp::Cbrt:  // exp(log|x| / 3): log's error times 1/3 stays far under a float ulp
        return copysign(exp(div(log(fabs(x)), k(3.0))), x);
      default:
        return x;
    }
  }

  std::string binary(IrOp op, const std::string& a, const std::string& b) {
    if (op == IrOp::Atan2) {  // a = y, b = x
      std::string ay = fabs(a), ax = fabs(b);
      std::string both_inf = setp("eq", ay, k(INFINITY));
      w_.op("and.pred {}, {}, {}", both_inf, both_inf, setp("eq", ax, k(INFINITY)));
      ay = select(both_inf, k(1.0), ay);
      ax = select(both_inf, k(1.0), ax);
      std::string r = atan(div(ay, ax));
      r = select(setp("eq", ay, k(0.0)), k(0.0), r);  // 0 / 0
      r = select(sign_set(b), sub(k(kPi), r), r);
      r = copysign(r, a);
      return select(setp("nan", a, b), add(a, b), r);
    }
    // pow(x = a, y = b): exp(y log|x|), then C's special cases.
    std::string ax = fabs(a);
    std::string r = exp(mul(b, log(ax)));
    // y an integer (finite), and odd: trunc(y) == y, trunc(y / 2) != y / 2.
    std::string ty = d(), half = d(), th = d();
    w_.op("cvt.rzi.f64.f64 {}, {}", ty, b);
    w_.op("mul.rn.f64 {}, {}, 0d3FE0000000000000", half, b);
    w_.op("cvt.rzi.f64.f64 {}, {}", th, half);
    std::string is_int = setp("eq", ty, b), odd = setp("ne", th, half);
    std::string finite_y = setp("lt", fabs(b), k(INFINITY));
    w_.op("and.pred {}, {}, {}", odd, odd, is_int);
    std::string neg_x = sign_set(a);
    std::string flip = p(), bad = p();
    w_.op("and.pred {}, {}, {}", flip, odd, neg_x);
    // A negative finite base with a finite non-integer exponent gives NaN.
    std::string neg_finite = setp("lt", a, k(0.0));
    w_.op("and.pred {}, {}, {}", neg_finite, neg_finite, setp("gt", a, k(-INFINITY)));
    w_.op("not.pred {}, {}", bad, is_int);
    w_.op("and.pred {}, {}, {}", bad, bad, neg_finite);
    w_.op("and.pred {}, {}, {}", bad, bad, finite_y);
    r = select(flip, mul(k(-1.0), r), r);
    r = select(bad, k(NAN), r);
    // pow(x, +-0) == 1, pow(1, y) == 1, pow(-1, +-inf) == 1 (NaN operands included).
    std::string one = setp("eq", b, k(0.0));
    w_.op("or.pred {}, {}, {}", one, one, setp("eq", a, k(1.0)));
    std::string m1 = setp("eq", ax, k(1.0)), inf_y = setp("eq", fabs(b), k(INFINITY));
    w_.op("and.pred {}, {}, {}", m1, m1, inf_y);
    w_.op("or.pred {}, {}, {}", one, one, m1);
    return select(one, k(1.0), r);
  }

 private:
  PtxWriter& w_;
};

}  // namespace

std::string emit_math_via_double(PtxWriter& w, IrOp op, const std::string& x,
                                 const std::string& y) {
  Wide m(w);
  std::string xd = m.d(), yd = m.d(), r = w.reg(RegClass::F32);
  w.op("cvt.f64.f32 {}, {}", xd, x);
  std::string out;
  if (op == IrOp::Atan2 || op == IrOp::Pow) {
    w.op("cvt.f64.f32 {}, {}", yd, y);
    out = m.binary(op, xd, yd);
  } else {
    out = m.unary(op, xd);
  }
  w.op("cvt.rn.f32.f64 {}, {}", r, out);
  return r;
}

}  // namespace ff::cuda_backend
