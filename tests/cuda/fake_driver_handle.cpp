// The simulated driver as a Driver object (kept apart from fake_driver.cpp, which
// libff_cuda_sim.so also compiles without the freezeframe library).
#include "cuda/fake_driver.h"

namespace ffcuda {

using ff::cuda_backend::Driver;

std::shared_ptr<const Driver> fake_driver() {
  static auto d = std::make_shared<const Driver>(fake_driver_api(true), 12000, "fake driver");
  return d;
}

std::shared_ptr<const Driver> fake_driver_without_graphs() {
  static auto d =
      std::make_shared<const Driver>(fake_driver_api(false), 11020, "fake driver (no graphs)");
  return d;
}

}  // namespace ffcuda
