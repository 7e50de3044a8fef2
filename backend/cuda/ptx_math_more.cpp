// The math functions after the first four (tan ... cbrt, atan2, pow) in PTX.
//
// Float64: each function reduced to an argument where a series converges fast, with the small part
// added last so that its rounding errors shrink (asin, acos, atan as fdlibm reduces them, sinh,
// tanh, asinh, atanh by their series near 0), or composed of exp and log where the composition
// loses nothing (exp2 with a two-part product, log2 from the exponent plus log of the
// mantissa, cbrt by Newton's iteration on the mantissa); erf from a table of Taylor
// polynomials of erfc; pow as exp(y log|x|) with the logarithm and the product in
// double-double.
//
// Float32: the Float64 routine on the widened argument, rounded once to float. Its few double
// ulp of error are ~2^-29 of a float ulp, so the float result is within about 0.5 ulp of exact
// (docs/math.md states what the interpreter measured).
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/cuda/ptx_math.h"

namespace ff::cuda_backend {
namespace {

constexpr double kLn2 = 0.6931471805599453;

// erfc on [1/2, 6) as Taylor polynomials around the midpoints x0 = 5/8, 7/8, ..., 47/8 of 22
// intervals of width 1/4: c_n = erfc^(n)(x0) / n!, where erfc^(n)(x) = (-1)^n (2/sqrt(pi))
// H_(n-1)(x) exp(-x^2) (physicists' Hermite polynomials), in long double; |h| <= 1/8 needs 24.
constexpr int kErfcIntervals = 22;
constexpr int kErfcTerms = 24;

std::vector<double> erfc_taylor_table() {
  std::vector<double> t;
  const long double two_over_sqrt_pi = 2 / std::sqrt(std::acos(-1.0L));
  for (int i = 0; i < kErfcIntervals; ++i) {
    long double x0 = 0.5L + (i + 0.5L) / 4;
    long double g = two_over_sqrt_pi * std::exp(-x0 * x0);
    t.push_back(static_cast<double>(std::erfc(x0)));
    long double h_prev = 0, h = 1, fact = 1;  // H_(n-1), starting at H_0
    for (int n = 1; n < kErfcTerms; ++n) {
      fact *= n;
      t.push_back(static_cast<double>((n % 2 ? -1 : 1) * g * h / fact));
      long double next = 2 * x0 * h - 2 * (n - 1) * h_prev;  // H_n
      h_prev = h;
      h = next;
    }
  }
  return t;
}

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

  std::string fma(const std::string& a, const std::string& b, const std::string& c) {
    std::string r = d();
    w_.op("fma.rn.f64 {}, {}, {}, {}", r, a, b, c);
    return r;
  }

  std::string neg(const std::string& a) { return mul(k(-1.0), a); }

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

  // C's special cases of pow(a, b) around r = |a|^b (a result for every finite positive |a|).
  std::string pow_special_cases(const std::string& a, const std::string& b, std::string r) {
    std::string ax = fabs(a);
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

  // x * 2^n for an integer-valued double n in [-1100, 1100], in two power-of-two factors so
  // that a subnormal result rounds once.
  std::string scale(const std::string& x, const std::string& n) {
    std::string ni = w_.reg(RegClass::B32), n1 = w_.reg(RegClass::B32), n2 = w_.reg(RegClass::B32);
    w_.op("cvt.rzi.s32.f64 {}, {}", ni, n);
    w_.op("shr.s32 {}, {}, 1", n1, ni);
    w_.op("sub.s32 {}, {}, {}", n2, ni, n1);
    std::string r = x;
    for (const std::string& part : {n1, n2}) {
      std::string e = w_.reg(RegClass::B32), e64 = w_.reg(RegClass::B64), f = d();
      w_.op("add.s32 {}, {}, 1023", e, part);
      w_.op("cvt.u64.u32 {}, {}", e64, e);
      w_.op("shl.b64 {}, {}, 52", e64, e64);
      w_.op("mov.b64 {}, {}", f, e64);
      r = mul(r, f);
    }
    return r;
  }

  // |x| = m 2^e with m in [1, 2) for finite nonzero x (subnormals scaled first); returns
  // {m, e as a double}.
  std::pair<std::string, std::string> frexp(const std::string& ax) {
    std::string sub_n = setp("lt", ax, k(0x1p-1022));
    std::string xs = select(sub_n, mul(ax, k(0x1p54)), ax);
    std::string b = w_.reg(RegClass::B64), eb = w_.reg(RegClass::B64), mb = w_.reg(RegClass::B64);
    w_.op("mov.b64 {}, {}", b, xs);
    w_.op("shr.u64 {}, {}, 52", eb, b);
    w_.op("and.b64 {}, {}, 0x7FF", eb, eb);
    w_.op("and.b64 {}, {}, 0x000FFFFFFFFFFFFF", mb, b);
    w_.op("or.b64 {}, {}, 0x3FF0000000000000", mb, mb);
    std::string m = d(), e = d();
    w_.op("mov.b64 {}, {}", m, mb);
    w_.op("cvt.rn.f64.u64 {}, {}", e, eb);
    e = sub(e, select(sub_n, k(1023.0 + 54.0), k(1023.0)));
    return {m, e};
  }

  // Series tail: x + x z S(z), S(z) = sum_{k>=1} c_k z^(k-1), z = x^2; the small part added
  // last.
  std::string odd_series(const std::string& x, const std::vector<double>& tail) {
    std::string z = mul(x, x);
    return fma(mul(x, z), horner(z, tail), x);
  }

  // atan(x), fdlibm's reduction: |x| < 7/16 directly; else atan(c) + atan(t) for
  // c = 1/2, 1, 3/2, inf with t = (|x| - c) / (1 + c |x|) (|t| <= 0.41), atan(c) in two parts;
  // the series to t^49.
  std::string atan64(const std::string& x) {
    std::string a = fabs(x);
    std::vector<double> tail;
    for (int n = 1; n < 25; ++n)
      tail.push_back((n % 2 ? -1.0 : 1.0) / (2 * n + 1));

    struct Band {
      double below;
      long double c;
    };

    const Band bands[] = {{11.0 / 16, 0.5L}, {19.0 / 16, 1.0L}, {39.0 / 16, 1.5L}};
    // Numerator and denominator of t, and atan(c) in two parts, by band (selected upward).
    std::string num = a, den = k(1.0), hi = k(0.0), lo = k(0.0);
    std::string in_band = setp("ge", a, k(7.0 / 16));
    for (const Band& band : bands) {
      double c = static_cast<double>(band.c);
      long double at = std::atan(band.c);
      double h = static_cast<double>(at), l = static_cast<double>(at - h);
      num = select(in_band, sub(a, k(c)), num);  // exact (Sterbenz)
      den = select(in_band, fma(a, k(c), k(1.0)), den);
      hi = select(in_band, k(h), hi);
      lo = select(in_band, k(l), lo);
      in_band = setp("ge", a, k(band.below));
    }
    long double pio2 = std::acos(-1.0L) / 2;
    double ph = static_cast<double>(pio2), pl = static_cast<double>(pio2 - ph);
    std::string last = setp("ge", a, k(39.0 / 16));
    w_.op("or.pred {}, {}, {}", last, last, setp("nan", a, a));
    num = select(last, k(-1.0), num);
    den = select(last, a, den);
    hi = select(last, k(ph), hi);
    lo = select(last, k(pl), lo);
    std::string t = div(num, den);
    std::string z = mul(t, t);
    std::string small = mul(mul(t, z), horner(z, tail));  // atan(t) - t
    std::string r = add(hi, add(t, add(lo, small)));
    return copysign(r, x);
  }

  // asin(s) for 0 <= s <= 1/2 by its series: s + s z S(z).
  std::string asin_small(const std::string& s) { return odd_series(s, asin_tail()); }

  static std::vector<double> asin_tail() {
    std::vector<double> c;
    long double coef = 1;  // (2k)! / (4^k (k!)^2)
    for (int n = 1; n < 30; ++n) {
      coef = coef * (2 * n - 1) / (2 * n);
      c.push_back(static_cast<double>(coef / (2 * n + 1)));
    }
    return c;
  }

  // sqrt(w) as s + c with c the rounding error of s (c = (w - s^2) / 2s by one fma).
  std::pair<std::string, std::string> sqrt2(const std::string& w) {
    std::string s = sqrt(w);
    std::string c = div(fma(neg(s), s, w), add(s, s));
    c = select(setp("eq", s, k(0.0)), k(0.0), c);
    return {s, c};
  }

  std::string unary64(IrOp op, const std::string& x) {
    long double pi_l = std::acos(-1.0L);
    const double pih = static_cast<double>(pi_l), pil = static_cast<double>(pi_l - pih);
    const double pio2h = static_cast<double>(pi_l / 2),
                 pio2l = static_cast<double>(pi_l / 2 - static_cast<long double>(pio2h));
    switch (op) {
      case IrOp::Tan: {
        std::string s = emit_math(w_, IrOp::Sin, ScalarType::Float64, x);
        std::string c = emit_math(w_, IrOp::Cos, ScalarType::Float64, x);
        return div(s, c);
      }
      case IrOp::Atan:
        return atan64(x);
      case IrOp::Asin: {
        // |x| <= 1/2: the series; above, pi/2 - 2 asin(sqrt((1 - |x|) / 2)).
        std::string a = fabs(x);
        std::string w = mul(sub(k(1.0), a), k(0.5));  // exact
        auto [s, c] = sqrt2(w);
        std::string z = mul(s, s);
        std::string tail = fma(mul(s, z), horner(z, asin_tail()), c);  // asin(s + c) - s
        std::string big = add(sub(k(pio2h), add(s, s)), sub(k(pio2l), add(tail, tail)));
        std::string r = select(setp("le", a, k(0.5)), asin_small(a), big);
        r = select(setp("gt", a, k(1.0)), k(NAN), r);
        return copysign(r, x);
      }
      case IrOp::Acos: {
        // |x| <= 1/2: pi/2 - asin(x); x > 1/2: 2 asin(sqrt((1 - x) / 2));
        // x < -1/2: pi - 2 asin(sqrt((1 + x) / 2)).
        std::string a = fabs(x);
        std::string mid = sub(k(pio2h), sub(asin_small(x), k(pio2l)));
        std::string w = mul(sub(k(1.0), a), k(0.5));
        auto [s, c] = sqrt2(w);
        std::string z = mul(s, s);
        std::string tail = fma(mul(s, z), horner(z, asin_tail()), c);
        std::string two_asin = add(add(s, s), add(tail, tail));
        std::string neg_side = sub(k(pih), sub(two_asin, k(pil)));
        std::string r = select(setp("lt", x, k(0.0)), neg_side, two_asin);
        r = select(setp("le", a, k(0.5)), mid, r);
        return select(setp("gt", a, k(1.0)), k(NAN), r);
      }
      case IrOp::Sinh: {
        std::vector<double> tail;
        long double f = 6;
        for (int n = 1; n < 15; ++n) {
          tail.push_back(static_cast<double>(1 / f));
          f *= (2 * n + 2) * (2 * n + 3);
        }
        std::string a = fabs(x), e = exp(a), h = exp(mul(a, k(0.5)));
        std::string mid = mul(k(0.5), sub(e, div(k(1.0), e)));
        std::string huge = mul(mul(k(0.5), h), h);
        std::string r = select(setp("lt", a, k(709.0)), mid, huge);
        r = select(setp("lt", a, k(2.0)), odd_series(a, tail), r);
        return copysign(r, x);
      }
      case IrOp::Cosh: {
        std::string a = fabs(x), e = exp(a), h = exp(mul(a, k(0.5)));
        std::string mid = mul(k(0.5), add(e, div(k(1.0), e)));
        return select(setp("lt", a, k(709.0)), mid, mul(mul(k(0.5), h), h));
      }
      case IrOp::Tanh: {
        // Below 1: tanh(a) / a as a series in z = a^2, its coefficients from dividing sinh's
        // series by cosh's (long double, at code generation).
        const int n = 48;
        std::vector<long double> sh(n), ch(n), q(n);
        long double f = 1;
        for (int i = 0; i < n; ++i) {
          ch[i] = 1 / f;
          sh[i] = 1 / (f * (2 * i + 1));
          f *= (2 * i + 1) * (2 * i + 2);
        }
        for (int i = 0; i < n; ++i) {
          long double v = sh[i];
          for (int j = 0; j < i; ++j)
            v -= q[j] * ch[i - j];
          q[i] = v;  // ch[0] == 1
        }
        std::vector<double> tail;
        for (int i = 1; i < n; ++i)
          tail.push_back(static_cast<double>(q[i]));
        std::string a = fabs(x), e2 = exp(add(a, a));
        std::string big = sub(k(1.0), div(k(2.0), add(e2, k(1.0))));
        std::string r = select(setp("lt", a, k(1.0)), odd_series(a, tail), big);
        return copysign(r, x);
      }
      case IrOp::Asinh: {
        std::vector<double> tail;
        long double coef = 1;
        for (int i = 1; i < 30; ++i) {
          coef = -coef * (2 * i - 1) / (2 * i);
          tail.push_back(static_cast<double>(coef / (2 * i + 1)));
        }
        std::string a = fabs(x);
        std::string mid = log(add(a, sqrt(fma(a, a, k(1.0)))));
        std::string huge = add(log(a), k(kLn2));
        std::string r = select(setp("lt", a, k(0x1p28)), mid, huge);
        r = select(setp("lt", a, k(0.5)), odd_series(a, tail), r);
        return copysign(r, x);
      }
      case IrOp::Acosh: {
        std::string t = sub(x, k(1.0));
        std::string near1 = log1p(add(t, sqrt(fma(t, t, add(t, t)))));
        std::string mid = log(sub(add(x, x), div(k(1.0), add(x, sqrt(fma(x, x, k(-1.0)))))));
        std::string huge = add(log(x), k(kLn2));
        std::string r = select(setp("lt", x, k(0x1p28)), mid, huge);
        r = select(setp("lt", x, k(2.0)), near1, r);
        return select(setp("lt", x, k(1.0)), k(NAN), r);
      }
      case IrOp::Atanh: {
        std::vector<double> tail;
        for (int i = 1; i < 30; ++i)
          tail.push_back(1.0 / (2 * i + 1));
        std::string a = fabs(x);
        std::string big = mul(k(0.5), log(div(add(k(1.0), a), sub(k(1.0), a))));
        std::string r = select(setp("lt", a, k(0.5)), odd_series(a, tail), big);
        return copysign(r, x);
      }
      case IrOp::Exp2: {
        // 2^n exp(f ln2), f = x - rint(x) exact, f ln2 as a two-part product.
        std::string xc = d(), n = d();
        w_.op("max.f64 {}, {}, {}", xc, x, k(-1100.0));
        w_.op("min.f64 {}, {}, {}", xc, xc, k(1100.0));
        w_.op("cvt.rni.f64.f64 {}, {}", n, xc);
        std::string f = sub(xc, n);
        long double ln2 = std::log(2.0L);
        double lh = static_cast<double>(ln2), ll = static_cast<double>(ln2 - lh);
        std::string p = mul(f, k(lh));
        std::string e = fma(f, k(ll), fma(f, k(lh), neg(p)));
        std::string r = exp(p);
        r = scale(fma(r, e, r), n);
        return select(setp("nan", x, x), x, r);
      }
      case IrOp::Log2: {
        // e + log(m) log2(e) for |x| = m 2^e, m in [sqrt(1/2), sqrt(2)); the product in two
        // parts, added to e last.
        auto [m0, e0] = frexp(x);
        std::string big_m = setp("gt", m0, k(1.4142135623730951));
        std::string m = select(big_m, mul(m0, k(0.5)), m0);
        std::string e = select(big_m, add(e0, k(1.0)), e0);
        long double l2e = 1 / std::log(2.0L);
        double ch = static_cast<double>(l2e), cl = static_cast<double>(l2e - ch);
        std::string lm = log(m);
        std::string hi = mul(lm, k(ch));
        std::string lo = fma(lm, k(cl), fma(lm, k(ch), neg(hi)));
        std::string s = add(e, hi);
        std::string err = add(sub(e, s), hi);  // exact: |e| >= |hi| or e == 0
        std::string r = add(s, add(err, lo));
        r = select(setp("eq", x, k(0.0)), k(-INFINITY), r);
        r = select(setp("eq", x, k(INFINITY)), x, r);
        return select(setp("lt", x, k(0.0)), k(NAN), select(setp("nan", x, x), x, r));
      }
      case IrOp::Erf: {
        // Below 1/2 the series a (c + z S(z)), c = 2/sqrt(pi) in two parts; up to 6,
        // 1 - erfc(a) with erfc from the Taylor table (ff_erfc_taylor); beyond, 1 (erfc(6) is
        // under half an ulp of 1).
        long double c_l = 2 / std::sqrt(std::acos(-1.0L));
        double ch = static_cast<double>(c_l), cl = static_cast<double>(c_l - ch);
        std::vector<double> tail;
        long double f = 1;
        for (int n = 1; n < 16; ++n) {
          f *= n;
          tail.push_back(static_cast<double>((n % 2 ? -c_l : c_l) / (f * (2 * n + 1))));
        }
        std::string a = fabs(x), z = mul(a, a);
        std::string small = fma(a, k(ch), fma(a, k(cl), mul(mul(a, z), horner(z, tail))));
        // Interval i = clamp(floor((a - 1/2) 4), 0, 21), x0 its midpoint, h = a - x0 exact.
        std::string fi = d();
        w_.op("fma.rn.f64 {}, {}, 0d4010000000000000, 0dC000000000000000", fi, a);
        w_.op("cvt.rmi.f64.f64 {}, {}", fi, fi);
        w_.op("max.f64 {}, {}, 0d0000000000000000", fi, fi);
        w_.op("min.f64 {}, {}, {}", fi, fi, k(kErfcIntervals - 1));
        std::string x0 = fma(fi, k(0.25), k(0.625));
        std::string h = sub(a, x0);
        std::string idx = w_.reg(RegClass::B32), off = w_.reg(RegClass::B64),
                    addr = w_.reg(RegClass::B64);
        w_.op("cvt.rzi.u32.f64 {}, {}", idx, fi);
        w_.op("mul.wide.u32 {}, {}, {}", off, idx, kErfcTerms * 8);
        w_.op("mov.u64 {}, ff_erfc_taylor", addr);
        w_.op("add.u64 {}, {}, {}", addr, addr, off);
        std::string acc = d();
        w_.op("ld.global.f64 {}, [{}+{}]", acc, addr, (kErfcTerms - 1) * 8);
        for (int n = kErfcTerms - 2; n >= 0; --n) {
          std::string cn = d(), q = d();
          w_.op("ld.global.f64 {}, [{}+{}]", cn, addr, n * 8);
          w_.op("fma.rn.f64 {}, {}, {}, {}", q, acc, h, cn);
          acc = q;
        }
        std::string r = select(setp("lt", a, k(6.0)), sub(k(1.0), acc), k(1.0));
        r = select(setp("lt", a, k(0.5)), small, r);
        r = select(setp("nan", x, x), x, r);
        return copysign(r, x);
      }
      case IrOp::Cbrt: {
        // |x| = m 2^e; with e = 3q + r, cbrt = cbrt(m 2^r) 2^q, the first by Newton's
        // iteration from 2 (above every root of [1, 8): it converges from above).
        std::string a = fabs(x);
        auto [m, e] = frexp(a);
        std::string eo = add(e, k(1200.0));  // positive, a multiple of 3 apart
        std::string q3 = d();
        w_.op("mul.rn.f64 {}, {}, {}", q3, eo, k(1.0 / 3));
        w_.op("cvt.rmi.f64.f64 {}, {}", q3, q3);
        // floor(eo * (1/3)) may be one off where the product rounds across an integer.
        std::string rem = sub(eo, mul(q3, k(3.0)));
        std::string low = setp("lt", rem, k(0.0)), high = setp("ge", rem, k(3.0));
        q3 = select(low, sub(q3, k(1.0)), select(high, add(q3, k(1.0)), q3));
        rem = select(low, add(rem, k(3.0)), select(high, sub(rem, k(3.0)), rem));
        std::string t = scale(m, rem);
        std::string y = k(2.0);
        for (int i = 0; i < 7; ++i)
          y = sub(y, div(fma(mul(y, y), y, neg(t)), mul(k(3.0), mul(y, y))));
        std::string r = scale(y, sub(q3, k(400.0)));
        std::string special = setp("eq", a, k(0.0));
        w_.op("or.pred {}, {}, {}", special, special, setp("eq", a, k(INFINITY)));
        w_.op("or.pred {}, {}, {}", special, special, setp("nan", a, a));
        r = select(special, a, r);
        return copysign(r, x);
      }
      default:
        return x;
    }
  }

  // (hi, lo) = a + b exactly (Knuth's two-sum: any magnitudes).
  std::pair<std::string, std::string> two_sum(const std::string& a, const std::string& b) {
    std::string s = add(a, b), bb = sub(s, a);
    std::string err = add(sub(a, sub(s, bb)), sub(b, bb));
    return {s, err};
  }

  // pow in double: exp(y log|x|) with log|x| and the product in double-double (about 2^-65
  // relative), so that a product as large as 709 still carries under half an ulp of error
  // into exp; then exp(hi) (1 + lo).
  std::string pow64(const std::string& a, const std::string& b) {
    std::string ax = fabs(a);
    // |x| = m 2^e, m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s), s = f / (2 + f), f = m - 1.
    auto [m0, e0] = frexp(ax);
    std::string big_m = setp("gt", m0, k(1.4142135623730951));
    std::string m = select(big_m, mul(m0, k(0.5)), m0);
    std::string e = select(big_m, add(e0, k(1.0)), e0);
    std::string f = sub(m, k(1.0));  // exact (Sterbenz)
    std::string d_hi = add(f, k(2.0));
    std::string d_lo = add(sub(k(2.0), d_hi), f);  // exact: |2| >= |f|
    std::string s_hi = div(f, d_hi);
    std::string r = sub(fma(neg(s_hi), d_hi, f), mul(s_hi, d_lo));
    std::string s_lo = div(r, d_hi);
    // 2 s^3 / 3 in two parts; the rest of the series from s_hi in double.
    std::string p_hi = mul(s_hi, s_hi), p_lo = fma(s_hi, s_hi, neg(p_hi));
    std::string q_hi = mul(p_hi, s_hi), q_lo = fma(p_lo, s_hi, fma(p_hi, s_hi, neg(q_hi)));
    long double two_thirds = 2.0L / 3;
    double th = static_cast<double>(two_thirds), tl = static_cast<double>(two_thirds - th);
    std::string t_hi = mul(q_hi, k(th));
    std::string t_lo = fma(q_lo, k(th), fma(q_hi, k(tl), fma(q_hi, k(th), neg(t_hi))));
    std::vector<double> rest;  // 2 s^5 / 5 + 2 s^7 / 7 + ... = s^5 (2/5 + 2/7 z + ...)
    for (int n = 2; n < 14; ++n)
      rest.push_back(2.0 / (2 * n + 1));
    std::string z = p_hi;
    std::string tail = mul(mul(q_hi, z), horner(z, rest));
    // d/ds of the series times s_lo: 2 s_lo / (1 - s^2).
    std::string lin = div(add(s_lo, s_lo), sub(k(1.0), p_hi));
    auto [lm_hi, lm_lo] = two_sum(add(s_hi, s_hi), t_hi);
    lm_lo = add(lm_lo, add(t_lo, add(tail, lin)));
    // + e ln2 (ln2's high part has 42 bits, so e ln2_hi is exact).
    const double ln2_hi = 0x1.62e42fefa3800p-1;
    const double ln2_lo = static_cast<double>(std::log(2.0L) - static_cast<long double>(ln2_hi));
    auto [l_hi, l_lo] = two_sum(mul(e, k(ln2_hi)), lm_hi);
    l_lo = add(l_lo, add(lm_lo, mul(e, k(ln2_lo))));
    std::tie(l_hi, l_lo) = two_sum(l_hi, l_lo);  // |lo| was up to ~1e-6 (the series' tail)
    // y log|x| in two parts, then exp(hi) (1 + lo). |x| of 0, inf or NaN: log|x| is -inf,
    // inf or NaN, which exp maps to 0, inf or NaN by the sign of y.
    std::string y_hi = mul(b, l_hi);
    std::string y_lo = fma(b, l_lo, fma(b, l_hi, neg(y_hi)));
    std::string regular = setp("gt", ax, k(0.0));
    w_.op("and.pred {}, {}, {}", regular, regular, setp("lt", ax, k(INFINITY)));
    std::string finite = setp("lt", fabs(y_hi), k(INFINITY));
    w_.op("and.pred {}, {}, {}", finite, finite, regular);
    auto [n_hi, n_lo] = two_sum(y_hi, y_lo);  // exp(hi) (1 + lo) needs |lo| <= ulp(hi)
    std::string special_log = select(setp("eq", ax, k(0.0)), k(-INFINITY), ax);
    y_hi = select(finite, n_hi, select(regular, y_hi, mul(b, special_log)));
    y_lo = select(finite, n_lo, k(0.0));
    std::string ex = exp(y_hi);
    std::string res = select(setp("lt", ex, k(INFINITY)), fma(ex, y_lo, ex), ex);  // inf * 0
    return pow_special_cases(a, b, res);
  }

  // atan2 in double: atan(|y| / |x|) (fdlibm's atan), then C's quadrants and zeros; pi in two
  // parts.
  std::string atan2_64(const std::string& y, const std::string& x) {
    long double pi_l = std::acos(-1.0L);
    const double pih = static_cast<double>(pi_l), pil = static_cast<double>(pi_l - pih);
    std::string ay = fabs(y), ax = fabs(x);
    std::string both_inf = setp("eq", ay, k(INFINITY));
    w_.op("and.pred {}, {}, {}", both_inf, both_inf, setp("eq", ax, k(INFINITY)));
    ay = select(both_inf, k(1.0), ay);
    ax = select(both_inf, k(1.0), ax);
    std::string r = atan64(div(ay, ax));
    r = select(setp("eq", ay, k(0.0)), k(0.0), r);
    r = select(sign_set(x), sub(k(pih), sub(r, k(pil))), r);
    r = copysign(r, y);
    return select(setp("nan", y, x), add(y, x), r);
  }

 private:
  PtxWriter& w_;
};

}  // namespace

std::string ptx_erfc_table() {
  std::vector<double> t = erfc_taylor_table();
  std::string s = fmt::format(".global .align 8 .b64 ff_erfc_taylor[{}] = {{", t.size());
  for (size_t i = 0; i < t.size(); ++i)
    s += fmt::format("{}0x{:016X}", i ? ", " : "", std::bit_cast<uint64_t>(t[i]));
  return s + "};\n\n";
}

std::string emit_math2(PtxWriter& w, IrOp op, ScalarType t, const std::string& x,
                       const std::string& y) {
  Wide m(w);
  auto run = [&](const std::string& a, const std::string& b) {
    if (op == IrOp::Pow)
      return m.pow64(a, b);
    return op == IrOp::Atan2 ? m.atan2_64(a, b) : m.unary64(op, a);
  };
  if (t == ScalarType::Float64)
    return run(x, y);
  std::string xd = m.d(), yd, r = w.reg(RegClass::F32);
  w.op("cvt.f64.f32 {}, {}", xd, x);
  if (op == IrOp::Atan2 || op == IrOp::Pow) {
    yd = m.d();
    w.op("cvt.f64.f32 {}, {}", yd, y);
  }
  w.op("cvt.rn.f32.f64 {}, {}", r, run(xd, yd));
  return r;
}

}  // namespace ff::cuda_backend
