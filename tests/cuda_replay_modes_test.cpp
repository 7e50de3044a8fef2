// Graph replay against op-by-op replay on the "cuda" stack (a real GPU in ff_tests_cuda, the
// simulated driver in ff_tests_cuda_sim): every function of the cross-backend corpus, recorded
// once, replayed at several sizes both ways (FF_CUDA_GRAPHS=0 / 1), outputs equal (floats within
// a few ulp: atomic float sums may add in another order).
#include <catch2/catch.hpp>
#include <cstdlib>

#include "cuda/backend_env.h"
#include "cuda/cross_corpus.h"

using namespace ffcuda;

TEST_CASE("graph replay equals op-by-op replay on cuda", "[cuda][graph]") {
  if (!require_cuda())
    return;
  for (const CrossCase& c : cross_corpus()) {
    INFO("case " << c.name);
    ffr::fresh("cuda");
    ff::Recording r;
    {
      ffr::Inputs in = ffr::make_inputs(c.name, c.inputs, kCrossRecordSize);
      r = ff::record(in, [&] { return c.fn(in); });
    }
    for (size_t n : cross_replay_sizes()) {
      INFO("size " << n);
      std::vector<ffr::HostArray> got[2];
      for (int graphs = 0; graphs < 2; ++graphs) {
        setenv("FF_CUDA_GRAPHS", graphs ? "1" : "0", 1);
        ffr::fresh("cuda");
        // twice: the second replay re-binds the graph built by the first
        for (int rep = 0; rep < 2; ++rep)
          got[graphs] = ffr::snapshot(r.replay(ffr::make_inputs(c.name, c.inputs, n)));
      }
      unsetenv("FF_CUDA_GRAPHS");
      REQUIRE(got[0].size() == got[1].size());
      for (size_t k = 0; k < got[0].size(); ++k) {
        INFO("output " << k);
        CHECK(compare_within(got[1][k], got[0][k], 4, 1e-6) == "");
      }
    }
  }
  ff::shutdown();
}
