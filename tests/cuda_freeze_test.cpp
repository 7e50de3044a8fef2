// Frozen functions on the "cuda" stack (a real GPU in ff_tests_cuda, the simulated driver in
// ff_tests_cuda_sim): a step that updates a struct taken by reference and returns reductions,
// frozen at one size and replayed at others (graph replay and op-by-op), against the same step
// traced on cuda; PCG32 inside a frozen function advances the caller's generator as traced; a
// loop, a branch and a call (kernel IR regions) replay as traced.
#include <array>
#include <catch2/catch.hpp>
#include <cstdlib>

#include "cuda/backend_env.h"
#include "support/freeze_check.h"

using ff::Float;
using ff::UInt32;

TEST_CASE("ff::freeze on cuda: replays at other sizes equal the traced step", "[cuda][freeze]") {
  if (!ffcuda::require_cuda())
    return;
  auto step = [](Particle& p, const Float& dt) {
    p.vel = p.vel - 9.81f * dt;
    p.pos = ff::fma(p.vel, dt, p.pos);
    p.id += 1;
    UInt32 i = ff::arange<UInt32>(ff::width(p.pos));
    Float reversed = ff::gather<Float>(p.pos, i / 2u);  // each element twice
    return std::tuple{ff::sum(p.pos), ff::max_reduce(reversed - p.pos),
                      ff::prefix_sum(p.vel, false)};
  };
  for (const char* graphs : {"1", "0"}) {
    INFO("FF_CUDA_GRAPHS=" << graphs);
    setenv("FF_CUDA_GRAPHS", graphs, 1);
    ffr::fresh("cuda");
    auto f = ff::freeze(step);
    auto make = [](size_t n) {
      return std::tuple{Particle{fff::ramp(n, 0.5f), fff::ramp(n, -0.25f, 3.f), 0},
                        Float::from({0.125f})};
    };
    for (size_t n : {1000, 2, 3, 13, 4097, 1000})
      fff::same_as_traced(f, step, make, n, 1e-5);
    CHECK(f.n_recordings() == 1);
    CHECK(f.n_replays() == 5);
  }
  unsetenv("FF_CUDA_GRAPHS");
}

TEST_CASE("ff::freeze on cuda: PCG32 draws the traced numbers", "[cuda][freeze]") {
  if (!ffcuda::require_cuda())
    return;
  ffr::fresh("cuda");
  auto draw = [](ff::PCG32& rng) { return std::pair{rng.next_float(), rng.next_uint32()}; };
  auto f = ff::freeze(draw);
  ff::PCG32 a, b;
  a.seed(777, 42, 54);
  b.seed(777, 42, 54);
  for (int k = 0; k < 5; ++k) {
    auto [x, u] = f(a);
    auto [y, v] = draw(b);
    CHECK(x.to_vector() == y.to_vector());
    CHECK(u.to_vector() == v.to_vector());
  }
  CHECK(a.state.to_vector() == b.state.to_vector());
  CHECK(f.n_replays() == 4);
}

TEST_CASE("ff::freeze on cuda: a loop with a scatter, a branch and a call replay as traced",
          "[cuda][freeze]") {
  if (!ffcuda::require_cuda())
    return;
  auto step = [](const Float& x, const UInt32& which) {
    UInt32 hist = ff::zeros<UInt32>(4);
    auto [y, k] = ff::while_loop(
        std::make_tuple(x, ff::zeros<UInt32>(ff::width(x))),
        [](const Float& v, const UInt32&) { return v > 1.f; },
        [&](Float& v, UInt32& n) {
          v = v * 0.5f;
          n += 1u;
          ff::scatter_add(hist, UInt32(1u), n % 4u);
        });
    Float z = ff::if_stmt(
        std::make_tuple(y), k % 2u == 0u, [](const Float& v) { return v + 10.f; },
        [](const Float& v) { return v - 10.f; });
    std::array<Float (*)(const Float&), 2> targets = {[](const Float& v) { return v * 2.f; },
                                                      [](const Float& v) { return -v; }};
    return std::tuple{ff::switch_(which, targets, z), k, hist};
  };
  for (const char* graphs : {"1", "0"}) {
    INFO("FF_CUDA_GRAPHS=" << graphs);
    setenv("FF_CUDA_GRAPHS", graphs, 1);
    ffr::fresh("cuda");
    auto f = ff::freeze(step);
    auto make = [](size_t n) {
      return std::tuple{fff::ramp(n, 3.5f, 0.25f), ff::arange<UInt32>(n) % 3u};
    };
    for (size_t n : {100, 0, 1, 2, 13, 4097, 100})
      fff::same_as_traced(f, step, make, n, 0.0);
    CHECK(f.n_recordings() == 1);
  }
  unsetenv("FF_CUDA_GRAPHS");
}
