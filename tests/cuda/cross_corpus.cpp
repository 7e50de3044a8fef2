// The cross-backend corpus and its array files (see cross_corpus.h).
#include "cuda/cross_corpus.h"

#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace ffcuda {

using ff::Bool;
using ff::Float;
using ff::Float64;
using ff::Int32;
using ff::Int64;
using ff::UInt32;
using ff::UInt64;
using ffr::get;
using ffr::Inputs;
using ffr::specs;

std::vector<CrossCase> cross_corpus() {
  std::vector<CrossCase> c;
  c.push_back({"float32_math", specs(ffr::f32()), [](Inputs& in) -> Inputs {
                 Float x = get<Float>(in, 0) * 8.f - 4.f;
                 return {ff::exp(x), ff::log(ff::abs(x) + 0.5f), ff::sin(x * 3.f), ff::cos(x),
                         ff::sqrt(ff::abs(x)) / (x * x + 1.f)};
               }});
  c.push_back({"float64_math", specs(ffr::f64()), [](Inputs& in) -> Inputs {
                 Float64 x = get<Float64>(in, 0) * 40.0 - 20.0;
                 return {ff::exp(x), ff::log(ff::abs(x) + 0.5), ff::sin(x * 100.0),
                         ff::cos(x * 1e6), ff::floor(x) + ff::ceil(x * 0.5)};
               }});
  c.push_back({"float32_chain", specs(ffr::f32(), ffr::f32()), [](Inputs& in) -> Inputs {
                 Float x = get<Float>(in, 0), y = get<Float>(in, 1);
                 Float a = ff::fma(x, y, 1.f) - ff::min(x, y) * 0.5f;
                 return {a, ff::select(x > y, ff::exp(-x) * ff::cos(y), ff::sin(x + y)),
                         ff::max(x, y) / (y + 1.f)};
               }});
  c.push_back({"int_arithmetic", specs(ffr::i32(), ffr::u64()), [](Inputs& in) -> Inputs {
                 Int32 i = get<Int32>(in, 0);
                 UInt64 u = get<UInt64>(in, 1);
                 return {(i * 3 + 7) % 11,
                         i / 7 - ff::abs(i),
                         ff::min(i, 10) + ff::max(i, -10),
                         (u << 3ull) ^ (u >> 5ull),
                         ff::cast<Float>(u % 1000ull) * 0.5f,
                         ff::cast<Int64>(ff::cast<Float64>(i) * 1.5)};
               }});
  c.push_back({"gather_scatter", specs(ffr::f32(), ffr::i32()), [](Inputs& in) -> Inputs {
                 Float x = get<Float>(in, 0);
                 Int32 k = get<Int32>(in, 1);
                 UInt32 a = ff::arange<UInt32>(ff::width(x));
                 Float rev = ff::gather<Float>(x, ff::max_reduce(a) - a);
                 Float pairs = ff::zeros<Float>((ff::width(x) + 1) / 2);
                 ff::scatter_add(pairs, x, a / 2u);
                 Int32 bins = ff::zeros<Int32>(16);
                 ff::scatter_add(bins, 1, ff::cast<UInt32>(k & 15));
                 return {rev, pairs, bins, ff::gather<Float>(x, a / 2u, (a % 2u) == 0u)};
               }});
  c.push_back({"reductions", specs(ffr::f64(), ffr::i64()), [](Inputs& in) -> Inputs {
                 Float64 d = get<Float64>(in, 0);
                 Int64 l = get<Int64>(in, 1);
                 return {ff::sum(d), ff::min_reduce(d), ff::max_reduce(d), ff::mean(d),
                         ff::sum(l), ff::max_reduce(l), d - ff::mean(d)};
               }});
  c.push_back({"scan_compress", specs(ffr::f32(), ffr::u32()), [](Inputs& in) -> Inputs {
                 Float x = get<Float>(in, 0);
                 UInt32 u = get<UInt32>(in, 1);
                 UInt32 idx = ff::compress(x > 0.5f);
                 Float picked = ff::gather<Float>(x, idx);
                 return {ff::prefix_sum(u % 7u, true), ff::prefix_sum(u % 5u, false), picked,
                         ff::sum(picked), idx};
               }});
  c.push_back({"bool_logic", specs(ffr::f32(), ffr::boolean()), [](Inputs& in) -> Inputs {
                 Float x = get<Float>(in, 0);
                 Bool b = get<Bool>(in, 1);
                 Bool gt = x > 0.25f;
                 return {gt ^ b, !gt | b, ff::select(b, x, -x), ff::cast<Int32>(b) * 3};
               }});
  c.push_back({"control_flow", specs(ffr::f32(), ffr::u32()), [](Inputs& in) -> Inputs {
                 // A loop whose lanes iterate 0 to ~30 times with a scatter in its body, a
                 // branch and a call (kernel IR regions: PTX branches on the GPU).
                 Float x = ff::abs(get<Float>(in, 0)) * 1000.f;
                 UInt32 u = get<UInt32>(in, 1);
                 UInt32 hist = ff::zeros<UInt32>(8);
                 auto [y, k] = ff::while_loop(
                     std::make_tuple(x, ff::zeros<UInt32>(ff::width(x))),
                     [](const Float& v, const UInt32&) { return v > 1.f; },
                     [&](Float& v, UInt32& n) {
                       v = v * 0.5f;
                       n += 1u;
                       ff::scatter_add(hist, UInt32(1u), n % 8u);
                     });
                 Float z = ff::if_stmt(
                     std::make_tuple(y), k % 2u == 0u, [](const Float& v) { return v + 10.f; },
                     [](const Float& v) { return v * v; });
                 std::array<Float (*)(const Float&), 3> targets = {
                     [](const Float& v) { return v * 2.f; },
                     [](const Float& v) { return ff::sqrt(v); }, [](const Float& v) { return -v; }};
                 return {ff::switch_(u % 4u, targets, z), k, hist};
               }});
  return c;
}

std::string compare_within(const ffr::HostArray& got, const ffr::HostArray& want, double ulp,
                           double abs_tol) {
  std::ostringstream os;
  if (got.type != want.type || got.size() != want.size()) {
    os << "type/size " << ff::to_string(got.type) << "[" << got.size() << "], expected "
       << ff::to_string(want.type) << "[" << want.size() << "]";
    return os.str();
  }
  bool single = got.type == ff::ScalarType::Float32;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok;
    if (ff::is_float(got.type)) {
      double g = got.real[i], w = want.real[i];
      if (std::isnan(g) || std::isnan(w)) {
        ok = std::isnan(g) && std::isnan(w);
      } else if (g == w) {
        ok = true;
      } else if (std::isinf(g) || std::isinf(w)) {
        ok = false;
      } else {
        int e;
        std::frexp(std::max(std::fabs(g), std::fabs(w)), &e);
        double u = std::ldexp(1.0, std::max(e, single ? -125 : -1021) - (single ? 24 : 53));
        ok = std::fabs(g - w) <= ulp * u ||
             std::fabs(g - w) <= abs_tol * std::max(1.0, std::fabs(w));
      }
    } else {
      ok = got.bits[i] == want.bits[i];
    }
    if (!ok && bad++ == 0)
      first = i;
  }
  if (!bad)
    return "";
  os.precision(17);
  os << bad << " of " << got.size() << " differ; first [" << first << "]: got ";
  if (ff::is_float(got.type))
    os << got.real[first] << ", expected " << want.real[first];
  else
    os << static_cast<int64_t>(got.bits[first]) << ", expected "
       << static_cast<int64_t>(want.bits[first]);
  return os.str();
}

void save_arrays(const std::string& path, const std::vector<ffr::HostArray>& arrays) {
  std::ofstream f(path, std::ios::binary);
  auto put = [&](const void* p, size_t n) { f.write(static_cast<const char*>(p), long(n)); };
  auto count = static_cast<uint32_t>(arrays.size());
  put(&count, 4);
  for (const ffr::HostArray& a : arrays) {
    auto t = static_cast<uint8_t>(a.type);
    uint64_t n = a.size();
    put(&t, 1);
    put(&n, 8);
    if (ff::is_float(a.type))
      put(a.real.data(), n * 8);
    else
      put(a.bits.data(), n * 8);
  }
  if (!f)
    throw std::runtime_error("cannot write " + path);
}

std::vector<ffr::HostArray> load_arrays(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw std::runtime_error("cannot read " + path);
  auto get = [&](void* p, size_t n) {
    if (!f.read(static_cast<char*>(p), long(n)))
      throw std::runtime_error(path + " is truncated");
  };
  uint32_t count = 0;
  get(&count, 4);
  std::vector<ffr::HostArray> out(count);
  for (ffr::HostArray& a : out) {
    uint8_t t = 0;
    uint64_t n = 0;
    get(&t, 1);
    get(&n, 8);
    if (t >= ff::kNumScalarTypes || n > (uint64_t{1} << 32))
      throw std::runtime_error(path + " is damaged");
    a.type = static_cast<ff::ScalarType>(t);
    if (ff::is_float(a.type)) {
      a.real.resize(n);
      get(a.real.data(), n * 8);
    } else {
      a.bits.resize(n);
      get(a.bits.data(), n * 8);
    }
  }
  return out;
}

namespace {

template <class T>
ff::AnyArray typed(const ffr::HostArray& a) {
  std::vector<T> v(a.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>)
      v[i] = static_cast<T>(a.real[i]);
    else
      v[i] = static_cast<T>(a.bits[i]);
  }
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<bool> b(v.begin(), v.end());
    return ff::AnyArray(ff::Bool::from(b));
  } else {
    return ff::AnyArray(ff::Array<T>::from(v));
  }
}

}  // namespace

ffr::Inputs to_inputs(const std::vector<ffr::HostArray>& arrays) {
  ffr::Inputs out;
  for (const ffr::HostArray& a : arrays) {
    switch (a.type) {
      case ff::ScalarType::Bool:
        out.push_back(typed<bool>(a));
        break;
      case ff::ScalarType::Int32:
        out.push_back(typed<int32_t>(a));
        break;
      case ff::ScalarType::UInt32:
        out.push_back(typed<uint32_t>(a));
        break;
      case ff::ScalarType::Int64:
        out.push_back(typed<int64_t>(a));
        break;
      case ff::ScalarType::UInt64:
        out.push_back(typed<uint64_t>(a));
        break;
      case ff::ScalarType::Float32:
        out.push_back(typed<float>(a));
        break;
      case ff::ScalarType::Float64:
        out.push_back(typed<double>(a));
        break;
    }
  }
  return out;
}

}  // namespace ffcuda
