// The 2D particle step of examples/particle_step.h frozen: results equal the traced step's at
// every size (0, 1, 2, primes, the benchmark's 4,096 and 65,536), and its recording holds one
// guard per distinct size fact (the four inputs share one size: at most one guard per fact,
// however many operations decided it).
#include <catch2/catch.hpp>
#include <vector>

#include "examples/particle_step.h"
#include "support/freeze_check.h"

using namespace fff;
using ff::Float;

namespace {

void fresh() {
  ff::shutdown();
  ff::init("llvm");
}

}  // namespace

TEST_CASE("freeze particles: the frozen step equals the traced one at every size",
          "[freeze][particles]") {
  fresh();
  auto f = ff::freeze([](Particles& p) { particles::step(p, 0.01f); });
  for (size_t n : {4096, 0, 1, 2, 13, 61, 65536, 4096, 3}) {
    INFO("n = " << n);
    Particles a = particles::make(n), b = particles::make(n);
    for (int k = 0; k < 3; ++k) {
      f(a);
      particles::step(b, 0.01f);
    }
    CHECK(diff(snap(a), snap(b)) == "");
  }
  INFO(f.recording(0).to_string());
  CHECK(f.recording(0).n_guards() <= 4);
  CHECK(f.n_recordings() <= 3);  // size 1 broadcasts (its own guards), size 0 is empty
}
