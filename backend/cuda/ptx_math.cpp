// The PTX math routines (see ptx_math.h for the algorithms and their bounds). Every constant is
// a mathematical value rounded to nearest: 1/k! and 2/(2k+1) are computed here in the target
// precision (exact integers, one correctly rounded division); ln2, pi/2 and 2/pi splits are
// listed as bit patterns with their decimal values.
#include "backend/cuda/ptx_math.h"

#include <vector>

namespace ff::cuda_backend {

// 2/pi in binary, 64 bits per word, after one zero word (ptx_math.h). Generated with exact
// integer arithmetic (floor(2/pi * 2^1472) split into words); the first word starts
// 0.A2F9836E... = 0.6366197723675814 = 2/pi.
const uint64_t kTwoOverPi[kTwoOverPiWords] = {
    0x0000000000000000ULL, 0xA2F9836E4E441529ULL, 0xFC2757D1F534DDC0ULL, 0xDB6295993C439041ULL,
    0xFE5163ABDEBBC561ULL, 0xB7246E3A424DD2E0ULL, 0x06492EEA09D1921CULL, 0xFE1DEB1CB129A73EULL,
    0xE88235F52EBB4484ULL, 0xE99C7026B45F7E41ULL, 0x3991D639835339F4ULL, 0x9C845F8BBDF9283BULL,
    0x1FF897FFDE05980FULL, 0xEF2F118B5A0A6D1FULL, 0x6D367ECF27CB09B7ULL, 0x4F463F669E5FEA2DULL,
    0x7527BAC7EBE5F17BULL, 0x3D0739F78A5292EAULL, 0x6BFB5FB11F8D5D08ULL, 0x56033046FC7B6BABULL,
    0xF0CFBC209AF4361DULL, 0xA9E391615EE61B08ULL, 0x6599855F14A06840ULL, 0x8DFFD8804D732731ULL};

namespace {

// Constants by bit pattern (value rounded to nearest in the named precision).
constexpr uint32_t kLog2eF = 0x3FB8AA3B;      // log2(e) = 1.44269502
constexpr uint32_t kLn2HiF = 0x3F317218;      // ln(2) = 0.693147182
constexpr uint32_t kLn2LoF = 0xB102E308;      // ln(2) - kLn2HiF = -1.90465421e-09
constexpr uint32_t kTwoOverPiF = 0x3F22F983;  // 2/pi = 0.636619747
constexpr uint32_t kPio2AF = 0x3FC90FDB;      // pi/2 = 1.57079637
constexpr uint32_t kPio2BF = 0xB33BBD2E;      // pi/2 - A = -4.37113883e-08
constexpr uint32_t kPio2CF = 0xA6F72CED;      // pi/2 - A - B = -1.71512451e-15

constexpr uint64_t kLog2eD = 0x3FF71547652B82FEULL;      // 1.4426950408889634
constexpr uint64_t kLn2HiD = 0x3FE62E42FEFA39EFULL;      // 0.6931471805599453
constexpr uint64_t kLn2LoD = 0x3C7ABC9E3B39803FULL;      // 2.3190468138462996e-17
constexpr uint64_t kTwoOverPiD = 0x3FE45F306DC9C883ULL;  // 0.6366197723675814
constexpr uint64_t kPio2AD = 0x3FF921FB54442D18ULL;      // 1.5707963267948966
constexpr uint64_t kPio2BD = 0x3C91A62633145C07ULL;      // 6.123233995736766e-17
constexpr uint64_t kPio2CD = 0xB91F1976B7ED8FBCULL;      // -1.4973849048591698e-33

// Emits the routines for one precision; `d` selects Float64.
class MathEmitter {
 public:
  MathEmitter(PtxWriter& w, bool d) : w_(w), d_(d) {}

  std::string exp(const std::string& x);
  std::string log(const std::string& x);
  std::string sincos(const std::string& x, bool cosine);

 private:
  const char* ft() const { return d_ ? "f64" : "f32"; }

  const char* bt() const { return d_ ? "b64" : "b32"; }

  RegClass fc() const { return d_ ? RegClass::F64 : RegClass::F32; }

  RegClass ic() const { return d_ ? RegClass::B64 : RegClass::B32; }

  std::string k(double v) const { return d_ ? ptx_f64(v) : ptx_f32(static_cast<float>(v)); }

  std::string kbits(uint64_t bits) const {
    return d_ ? ptx_f64_bits(bits) : ptx_f32_bits(static_cast<uint32_t>(bits));
  }

  std::string freg() { return w_.reg(fc()); }

  // Horner: ((c[n-1] z + c[n-2]) z + ...) z + c[0], with fma.rn.
  std::string horner(const std::string& z, const std::vector<std::string>& c) {
    std::string p = freg();
    w_.op("mov.{} {}, {}", ft(), p, c.back());
    for (size_t i = c.size() - 1; i-- > 0;) {
      std::string q = freg();
      w_.op("fma.rn.{} {}, {}, {}, {}", ft(), q, p, z, c[i]);
      p = q;
    }
    return p;
  }

  // |x| by clearing the sign bit (exact for every input, NaN included).
  std::string fabs(const std::string& x) {
    std::string b = w_.reg(ic()), a = freg();
    w_.op("mov.{} {}, {}", bt(), b, x);
    w_.op("and.{} {}, {}, {}", bt(), b, b, d_ ? "0x7FFFFFFFFFFFFFFF" : "0x7FFFFFFF");
    w_.op("mov.{} {}, {}", bt(), a, b);
    return a;
  }

  void payne_hanek(const std::string& ax, const std::string& q, const std::string& r);

  PtxWriter& w_;
  bool d_;
};

// 0!, 1!, ..., (n-1)! (exact doubles for every n used here).
std::vector<double> factorials(int n) {
  std::vector<double> v;
  double f = 1;
  for (int i = 0; i < n; ++i) {
    if (i > 0)
      f *= i;  // exact: every k! used here is representable
    v.push_back(f);
  }
  return v;
}

}  // namespace

std::string MathEmitter::exp(const std::string& x) {
  // Clamp so k stays within the two-step scaling's range; NaN is restored at the end.
  std::string xc = freg(), t = freg(), kf = freg(), nk = freg(), r = freg(), r2 = freg();
  w_.op("max.{} {}, {}, {}", ft(), xc, x, k(d_ ? -746.0 : -104.0));
  w_.op("min.{} {}, {}, {}", ft(), xc, xc, k(d_ ? 710.0 : 89.0));
  w_.op("mul.rn.{} {}, {}, {}", ft(), t, xc, kbits(d_ ? kLog2eD : kLog2eF));
  w_.op("cvt.rni.{}.{} {}, {}", ft(), ft(), kf, t);
  w_.op("neg.{} {}, {}", ft(), nk, kf);
  w_.op("fma.rn.{} {}, {}, {}, {}", ft(), r, nk, kbits(d_ ? kLn2HiD : kLn2HiF), xc);
  w_.op("fma.rn.{} {}, {}, {}, {}", ft(), r2, nk, kbits(d_ ? kLn2LoD : kLn2LoF), r);
  // exp(r) = sum r^i / i!, i <= 7 (f32) or 13 (f64).
  int n = d_ ? 14 : 8;
  std::vector<std::string> c;
  for (double f : factorials(n))
    c.push_back(d_ ? ptx_f64(1.0 / f) : ptx_f32(1.0f / static_cast<float>(f)));
  std::string p = horner(r2, c);
  // 2^k in two factors 2^k1 * 2^k2 (k1 = k >> 1): each a normal power of two.
  std::string ki = w_.reg(RegClass::B32), k1 = w_.reg(RegClass::B32), k2 = w_.reg(RegClass::B32);
  w_.op("cvt.rzi.s32.{} {}, {}", ft(), ki, kf);
  w_.op("shr.s32 {}, {}, 1", k1, ki);
  w_.op("sub.s32 {}, {}, {}", k2, ki, k1);
  std::string res = p;
  for (const std::string& kk : {k1, k2}) {
    std::string scale = freg();
    if (d_) {
      std::string e = w_.reg(RegClass::B32), e64 = w_.reg(RegClass::B64);
      w_.op("add.s32 {}, {}, 1023", e, kk);
      w_.op("cvt.u64.u32 {}, {}", e64, e);
      w_.op("shl.b64 {}, {}, 52", e64, e64);
      w_.op("mov.b64 {}, {}", scale, e64);
    } else {
      std::string e = w_.reg(RegClass::B32);
      w_.op("add.s32 {}, {}, 127", e, kk);
      w_.op("shl.b32 {}, {}, 23", e, e);
      w_.op("mov.b32 {}, {}", scale, e);
    }
    std::string next = freg();
    w_.op("mul.rn.{} {}, {}, {}", ft(), next, res, scale);
    res = next;
  }
  std::string pn = w_.reg(RegClass::Pred), out = freg();
  w_.op("setp.nan.{} {}, {}, {}", ft(), pn, x, x);
  w_.op("selp.{} {}, {}, {}, {}", ft(), out, x, res, pn);
  return out;
}

std::string MathEmitter::log(const std::string& x) {
  // Subnormals: scale into the normal range first.
  std::string psub = w_.reg(RegClass::Pred), xs = freg(), xsc = freg();
  std::string eadj = w_.reg(RegClass::B32);
  w_.op("setp.lt.{} {}, {}, {}", ft(), psub, x,
        kbits(d_ ? 0x0010000000000000ULL : 0x00800000u));  // smallest normal
  w_.op("mul.rn.{} {}, {}, {}", ft(), xs, x, d_ ? ptx_f64(0x1p54) : ptx_f32(0x1p23f));
  w_.op("selp.{} {}, {}, {}, {}", ft(), xsc, xs, x, psub);
  w_.op("selp.s32 {}, {}, 0, {}", eadj, d_ ? -54 : -23, psub);
  // x = 2^e m, m in [1, 2); halve m above sqrt(2).
  std::string bits = w_.reg(ic()), e = w_.reg(RegClass::B32), mb = w_.reg(ic());
  w_.op("mov.{} {}, {}", bt(), bits, xsc);
  if (d_) {
    std::string e64 = w_.reg(RegClass::B64);
    w_.op("shr.u64 {}, {}, 52", e64, bits);
    w_.op("cvt.u32.u64 {}, {}", e, e64);
    w_.op("and.b32 {}, {}, 2047", e, e);
    w_.op("sub.s32 {}, {}, 1023", e, e);
    w_.op("and.b64 {}, {}, 0x000FFFFFFFFFFFFF", mb, bits);
    w_.op("or.b64 {}, {}, 0x3FF0000000000000", mb, mb);
  } else {
    w_.op("shr.u32 {}, {}, 23", e, bits);
    w_.op("and.b32 {}, {}, 255", e, e);
    w_.op("sub.s32 {}, {}, 127", e, e);
    w_.op("and.b32 {}, {}, 0x007FFFFF", mb, bits);
    w_.op("or.b32 {}, {}, 0x3F800000", mb, mb);
  }
  w_.op("add.s32 {}, {}, {}", e, e, eadj);
  std::string pbig = w_.reg(RegClass::Pred), mb2 = w_.reg(ic()), e2 = w_.reg(RegClass::B32);
  std::string mbs = w_.reg(ic()), es = w_.reg(RegClass::B32);
  if (d_) {
    w_.op("setp.gt.u64 {}, {}, 0x3FF6A09E667F3BCC", pbig, mb);  // sqrt(2)
    w_.op("sub.s64 {}, {}, 0x0010000000000000", mb2, mb);
  } else {
    w_.op("setp.gt.u32 {}, {}, 0x3FB504F3", pbig, mb);  // sqrt(2)
    w_.op("sub.s32 {}, {}, 0x00800000", mb2, mb);
  }
  w_.op("selp.{} {}, {}, {}, {}", bt(), mbs, mb2, mb, pbig);
  w_.op("add.s32 {}, {}, 1", e2, e);
  w_.op("selp.b32 {}, {}, {}, {}", es, e2, e, pbig);
  std::string m = freg(), f = freg(), den = freg(), s = freg(), z = freg();
  w_.op("mov.{} {}, {}", bt(), m, mbs);
  w_.op("sub.rn.{} {}, {}, {}", ft(), f, m, k(1.0));  // exact (Sterbenz)
  w_.op("add.rn.{} {}, {}, {}", ft(), den, f, k(2.0));
  w_.op("div.rn.{} {}, {}, {}", ft(), s, f, den);
  w_.op("mul.rn.{} {}, {}, {}", ft(), z, s, s);
  // R = z (2/3 + 2/5 z + 2/7 z^2 + ...); log(m) = f - s (f - R).
  std::vector<std::string> c;
  for (int i = 0; i < (d_ ? 10 : 5); ++i)
    c.push_back(d_ ? ptx_f64(2.0 / (2 * i + 3)) : ptx_f32(2.0f / static_cast<float>(2 * i + 3)));
  std::string rp = horner(z, c), rr = freg(), t = freg(), ns = freg(), lm = freg();
  w_.op("mul.rn.{} {}, {}, {}", ft(), rr, rp, z);
  w_.op("sub.rn.{} {}, {}, {}", ft(), t, f, rr);
  w_.op("neg.{} {}, {}", ft(), ns, s);
  w_.op("fma.rn.{} {}, {}, {}, {}", ft(), lm, ns, t, f);
  std::string ef = freg(), lo = freg(), res = freg();
  w_.op("cvt.rn.{}.s32 {}, {}", ft(), ef, es);
  w_.op("fma.rn.{} {}, {}, {}, {}", ft(), lo, ef, kbits(d_ ? kLn2LoD : kLn2LoF), lm);
  w_.op("fma.rn.{} {}, {}, {}, {}", ft(), res, ef, kbits(d_ ? kLn2HiD : kLn2HiF), lo);
  // log(+inf) = +inf, log(+-0) = -inf, log(x < 0) = log(NaN) = NaN.
  std::string pinf = w_.reg(RegClass::Pred), pzero = w_.reg(RegClass::Pred);
  std::string pbad = w_.reg(RegClass::Pred), o1 = freg(), o2 = freg(), o3 = freg();
  std::string inf = kbits(d_ ? 0x7FF0000000000000ULL : 0x7F800000u);
  std::string ninf = kbits(d_ ? 0xFFF0000000000000ULL : 0xFF800000u);
  std::string nan = kbits(d_ ? 0x7FF8000000000000ULL : 0x7FC00000u);
  w_.op("setp.eq.{} {}, {}, {}", ft(), pinf, x, inf);
  w_.op("setp.eq.{} {}, {}, {}", ft(), pzero, x, k(0.0));
  w_.op("setp.ltu.{} {}, {}, {}", ft(), pbad, x, k(0.0));
  w_.op("selp.{} {}, {}, {}, {}", ft(), o1, x, res, pinf);
  w_.op("selp.{} {}, {}, {}, {}", ft(), o2, ninf, o1, pzero);
  w_.op("selp.{} {}, {}, {}, {}", ft(), o3, nan, o2, pbad);
  return o3;
}

// Payne-Hanek: `ax` (an F64 register, finite, >= 2^17) = (4j + q + f) pi/2 with |f| <= 1/2;
// writes q (B32, only its low two bits matter) and r = f pi/2 (F64). The window of 192 bits of
// 2/pi starting just above the bits that only add multiples of 4 is multiplied by the 53-bit
// mantissa; bits 190-191 of the 256-bit product are q, the next 128 the fraction.
void MathEmitter::payne_hanek(const std::string& ax, const std::string& q, const std::string& r) {
  auto b64 = [&] { return w_.reg(RegClass::B64); };
  auto b32 = [&] { return w_.reg(RegClass::B32); };
  std::string bits = b64(), mant = b64(), e64 = b64(), e = b32();
  w_.op("mov.b64 {}, {}", bits, ax);
  w_.op("and.b64 {}, {}, 0x000FFFFFFFFFFFFF", mant, bits);
  w_.op("or.b64 {}, {}, 0x0010000000000000", mant, mant);
  w_.op("shr.u64 {}, {}, 52", e64, bits);
  w_.op("cvt.u32.u64 {}, {}", e, e64);
  // Start bit of the window in the table: (e - 1075) - 1 + 63.
  std::string s = b32(), word = b32(), sh = b32(), rsh = b32();
  w_.op("sub.s32 {}, {}, 1013", s, e);
  w_.op("shr.u32 {}, {}, 6", word, s);
  w_.op("and.b32 {}, {}, 63", sh, s);
  w_.op("sub.s32 {}, 64, {}", rsh, sh);  // 64 when sh = 0: shifts clamp to 64, giving 0
  std::string base = b64(), off = b64(), addr = b64();
  w_.op("mov.u64 {}, ff_two_over_pi", base);
  w_.op("mul.wide.u32 {}, {}, 8", off, word);
  w_.op("add.u64 {}, {}, {}", addr, base, off);
  std::string tw[4];
  for (int i = 0; i < 4; ++i) {
    tw[i] = b64();
    w_.op("ld.global.u64 {}, [{}+{}]", tw[i], addr, 8 * i);
  }
  std::string win[3];
  for (int i = 0; i < 3; ++i) {
    std::string hi = b64(), lo = b64();
    win[i] = b64();
    w_.op("shl.b64 {}, {}, {}", hi, tw[i], sh);
    w_.op("shr.b64 {}, {}, {}", lo, tw[i + 1], rsh);
    w_.op("or.b64 {}, {}, {}", win[i], hi, lo);
  }
  // 256-bit product; only the words holding bits 62..191 are needed.
  std::string lo_c = b64(), hi_c = b64(), lo_b = b64(), hi_b = b64(), lo_a = b64();
  w_.op("mul.lo.u64 {}, {}, {}", lo_c, mant, win[2]);
  w_.op("mul.hi.u64 {}, {}, {}", hi_c, mant, win[2]);
  w_.op("mul.lo.u64 {}, {}, {}", lo_b, mant, win[1]);
  w_.op("mul.hi.u64 {}, {}, {}", hi_b, mant, win[1]);
  w_.op("mul.lo.u64 {}, {}, {}", lo_a, mant, win[0]);
  std::string p1 = b64(), p2 = b64();
  w_.op("add.cc.u64 {}, {}, {}", p1, hi_c, lo_b);
  w_.op("addc.u64 {}, {}, {}", p2, hi_b, lo_a);
  // Fraction bits 189..62 as a signed 128-bit fixed-point value (rounding q to nearest).
  std::string fh = b64(), fl = b64(), t1 = b64(), t2 = b64();
  w_.op("shl.b64 {}, {}, 2", fh, p2);
  w_.op("shr.b64 {}, {}, 62", t1, p1);
  w_.op("or.b64 {}, {}, {}", fh, fh, t1);
  w_.op("shl.b64 {}, {}, 2", fl, p1);
  w_.op("shr.b64 {}, {}, 62", t2, lo_c);
  w_.op("or.b64 {}, {}, {}", fl, fl, t2);
  std::string q64 = b64(), neg64 = b64(), negq = b32(), pneg = w_.reg(RegClass::Pred);
  w_.op("shr.b64 {}, {}, 62", q64, p2);
  w_.op("cvt.u32.u64 {}, {}", q, q64);
  w_.op("shr.b64 {}, {}, 63", neg64, fh);
  w_.op("cvt.u32.u64 {}, {}", negq, neg64);
  w_.op("add.s32 {}, {}, {}", q, q, negq);
  w_.op("setp.ne.u64 {}, {}, 0", pneg, neg64);
  // |fraction| (two's complement negation of 128 bits).
  std::string nh = b64(), nl = b64(), h = b64(), l = b64();
  w_.op("not.b64 {}, {}", nh, fh);
  w_.op("not.b64 {}, {}", nl, fl);
  w_.op("add.cc.u64 {}, {}, 1", nl, nl);
  w_.op("addc.u64 {}, {}, 0", nh, nh);
  w_.op("selp.b64 {}, {}, {}, {}", h, nh, fh, pneg);
  w_.op("selp.b64 {}, {}, {}, {}", l, nl, fl, pneg);
  // Normalise to 64 significant bits, split into 53 + 11 bits (both exact as doubles).
  std::string lz = b32(), rlz = b32(), n = b64(), nlo = b64();
  w_.op("clz.b64 {}, {}", lz, h);
  w_.op("sub.s32 {}, 64, {}", rlz, lz);
  w_.op("shl.b64 {}, {}, {}", n, h, lz);
  w_.op("shr.b64 {}, {}, {}", nlo, l, rlz);
  w_.op("or.b64 {}, {}, {}", n, n, nlo);
  std::string se = b32(), se64 = b64(), scale = w_.reg(RegClass::F64);
  w_.op("sub.s32 {}, 959, {}", se, lz);  // 2^-(64 + lz): biased exponent 1023 - 64 - lz
  w_.op("cvt.u64.u32 {}, {}", se64, se);
  w_.op("shl.b64 {}, {}, 52", se64, se64);
  w_.op("mov.b64 {}, {}", scale, se64);
  std::string nh53 = b64(), nl11 = b64();
  w_.op("and.b64 {}, {}, 0xFFFFFFFFFFFFF800", nh53, n);
  w_.op("and.b64 {}, {}, 0x7FF", nl11, n);
  auto f64 = [&] { return w_.reg(RegClass::F64); };
  std::string th = f64(), tl = f64(), ths = f64(), tls = f64();
  w_.op("cvt.rn.f64.u64 {}, {}", th, nh53);
  w_.op("cvt.rn.f64.u64 {}, {}", tl, nl11);
  w_.op("mul.rn.f64 {}, {}, {}", ths, th, scale);
  w_.op("mul.rn.f64 {}, {}, {}", tls, tl, scale);
  // r = t pi/2 with pi/2 in two parts.
  std::string u = f64(), u2 = f64(), rr = f64(), nr = f64();
  w_.op("mul.rn.f64 {}, {}, {}", u, tls, ptx_f64_bits(kPio2AD));
  w_.op("fma.rn.f64 {}, {}, {}, {}", u2, ths, ptx_f64_bits(kPio2BD), u);
  w_.op("fma.rn.f64 {}, {}, {}, {}", rr, ths, ptx_f64_bits(kPio2AD), u2);
  w_.op("neg.f64 {}, {}", nr, rr);
  w_.op("selp.f64 {}, {}, {}, {}", r, nr, rr, pneg);
}

std::string MathEmitter::sincos(const std::string& x, bool cosine) {
  std::string ax = fabs(x);
  std::string pspecial = w_.reg(RegClass::Pred), pbig = w_.reg(RegClass::Pred);
  std::string inf = kbits(d_ ? 0x7FF0000000000000ULL : 0x7F800000u);
  w_.op("setp.equ.{} {}, {}, {}", ft(), pspecial, ax, inf);  // NaN or inf
  w_.op("setp.ge.{} {}, {}, {}", ft(), pbig, ax, d_ ? ptx_f64(0x1p30) : ptx_f32(0x1p17f));
  std::string q = w_.reg(RegClass::B32), r = freg();
  std::string slow = w_.label(), join = w_.label();
  w_.op("@{} bra {}", pbig, slow);
  {
    // x = k pi/2 + r with pi/2 = A + B + C (each fma rounds once; the first is exact).
    std::string t = freg(), kf = freg(), nk = freg(), r1 = freg(), r2 = freg();
    w_.op("mul.rn.{} {}, {}, {}", ft(), t, x, kbits(d_ ? kTwoOverPiD : kTwoOverPiF));
    w_.op("cvt.rni.{}.{} {}, {}", ft(), ft(), kf, t);
    w_.op("neg.{} {}, {}", ft(), nk, kf);
    w_.op("fma.rn.{} {}, {}, {}, {}", ft(), r1, nk, kbits(d_ ? kPio2AD : kPio2AF), x);
    w_.op("fma.rn.{} {}, {}, {}, {}", ft(), r2, nk, kbits(d_ ? kPio2BD : kPio2BF), r1);
    w_.op("fma.rn.{} {}, {}, {}, {}", ft(), r, nk, kbits(d_ ? kPio2CD : kPio2CF), r2);
    w_.op("cvt.rzi.s32.{} {}, {}", ft(), q, kf);
    w_.op("bra {}", join);
  }
  w_.place(slow);
  {
    std::string axd = w_.reg(RegClass::F64), rd = w_.reg(RegClass::F64);
    if (d_)
      w_.op("mov.f64 {}, {}", axd, ax);
    else
      w_.op("cvt.f64.f32 {}, {}", axd, ax);
    payne_hanek(axd, q, rd);
    std::string rf = freg(), nr = freg(), nq = w_.reg(RegClass::B32);
    std::string pneg = w_.reg(RegClass::Pred);
    if (d_)
      w_.op("mov.f64 {}, {}", rf, rd);
    else
      w_.op("cvt.rn.f32.f64 {}, {}", rf, rd);
    w_.op("setp.lt.{} {}, {}, {}", ft(), pneg, x, k(0.0));
    w_.op("neg.{} {}, {}", ft(), nr, rf);
    w_.op("selp.{} {}, {}, {}, {}", ft(), r, nr, rf, pneg);
    w_.op("neg.s32 {}, {}", nq, q);
    w_.op("selp.b32 {}, {}, {}, {}", q, nq, q, pneg);
  }
  w_.place(join);
  std::string qq = q;
  if (cosine) {
    qq = w_.reg(RegClass::B32);
    w_.op("add.s32 {}, {}, 1", qq, q);
  }
  // sin(r) = r + r z (-1/3! + z/5! - ...), cos(r) = 1 + z (-1/2! + z/4! - ...), z = r^2.
  std::vector<double> inv = factorials(d_ ? 21 : 13);
  std::vector<std::string> sc, cc;
  for (int i = 3, sign = -1; i < (d_ ? 21 : 13); i += 2, sign = -sign)
    sc.push_back(d_ ? ptx_f64(sign / inv[i]) : ptx_f32(sign / static_cast<float>(inv[i])));
  for (int i = 2, sign = -1; i < (d_ ? 21 : 13); i += 2, sign = -sign)
    cc.push_back(d_ ? ptx_f64(sign / inv[i]) : ptx_f32(sign / static_cast<float>(inv[i])));
  std::string z = freg(), rz = freg(), sv = freg(), cv = freg();
  w_.op("mul.rn.{} {}, {}, {}", ft(), z, r, r);
  std::string ps = horner(z, sc);
  w_.op("mul.rn.{} {}, {}, {}", ft(), rz, r, z);
  w_.op("fma.rn.{} {}, {}, {}, {}", ft(), sv, rz, ps, r);
  std::string pc = horner(z, cc);
  w_.op("fma.rn.{} {}, {}, {}, {}", ft(), cv, z, pc, k(1.0));
  std::string q1 = w_.reg(RegClass::B32), q2 = w_.reg(RegClass::B32);
  std::string podd = w_.reg(RegClass::Pred), pneg = w_.reg(RegClass::Pred);
  std::string v = freg(), nv = freg(), v2 = freg(), out = freg(), nan = freg();
  w_.op("and.b32 {}, {}, 1", q1, qq);
  w_.op("setp.ne.u32 {}, {}, 0", podd, q1);
  w_.op("and.b32 {}, {}, 2", q2, qq);
  w_.op("setp.ne.u32 {}, {}, 0", pneg, q2);
  w_.op("selp.{} {}, {}, {}, {}", ft(), v, cv, sv, podd);
  w_.op("neg.{} {}, {}", ft(), nv, v);
  w_.op("selp.{} {}, {}, {}, {}", ft(), v2, nv, v, pneg);
  std::string res = v2;
  if (!cosine) {
    // sin(x) = x, correctly rounded, for |x| below 2^-12 (f32) / 2^-26 (f64): keeps -0.
    std::string ptiny = w_.reg(RegClass::Pred), v3 = freg();
    w_.op("setp.lt.{} {}, {}, {}", ft(), ptiny, ax, d_ ? ptx_f64(0x1p-26) : ptx_f32(0x1p-12f));
    w_.op("selp.{} {}, {}, {}, {}", ft(), v3, x, v2, ptiny);
    res = v3;
  }
  w_.op("sub.rn.{} {}, {}, {}", ft(), nan, x, x);  // NaN for NaN and +-inf
  w_.op("selp.{} {}, {}, {}, {}", ft(), out, nan, res, pspecial);
  return out;
}

std::string emit_math(PtxWriter& w, IrOp op, ScalarType t, const std::string& x) {
  if (op != IrOp::Exp && op != IrOp::Log && op != IrOp::Sin && op != IrOp::Cos)
    return emit_math2(w, op, t, x);
  MathEmitter m(w, t == ScalarType::Float64);
  switch (op) {
    case IrOp::Exp:
      return m.exp(x);
    case IrOp::Log:
      return m.log(x);
    case IrOp::Sin:
      return m.sincos(x, false);
    case IrOp::Cos:
      return m.sincos(x, true);
    default:
      return x;
  }
}

namespace {

std::string two_over_pi_table() {
  std::string s = fmt::format(".global .align 8 .b64 ff_two_over_pi[{}] = {{", kTwoOverPiWords);
  for (int i = 0; i < kTwoOverPiWords; ++i)
    s += fmt::format("{}0x{:016X}", i ? ", " : "", kTwoOverPi[i]);
  return s + "};\n\n";
}

}  // namespace

std::string ptx_math_globals(const KernelIR& ir) {
  bool two_over_pi = false, erfc = false;
  for (const IrInstr& in : ir.instrs) {
    if (!is_float(in.type))
      continue;
    // Tan (either width) reduces through the double sin and cos.
    two_over_pi = two_over_pi || in.op == IrOp::Sin || in.op == IrOp::Cos || in.op == IrOp::Tan;
    erfc = erfc || in.op == IrOp::Erf;  // Float32 runs the Float64 routine
  }
  return (two_over_pi ? two_over_pi_table() : "") + (erfc ? ptx_erfc_table() : "");
}

std::string ptx_math_globals() {
  return two_over_pi_table() + ptx_erfc_table();
}

}  // namespace ff::cuda_backend
