// A frozen call that replays inside another frozen function's recording and fails a size guard
// after its collective (an all_gather's result, 6 elements now, at most 4 when recorded). The
// recording around it makes the ranks' agreements, and the inner call may neither retry into it
// alone (its all_gather would meet the others' next collective) nor raise and leave the others
// waiting, so every rank ends (MPI_Abort) with a message on ff.dist; the test passes when that
// message appears (CTest's PASS_REGULAR_EXPRESSION) within its timeout. At the top level the
// same failure makes every rank retry (tests/dist/dist_failure_test.cpp).
#include <freezeframe/freezeframe.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  ff::dist::init(argc, argv);
  int r = ff::dist::rank();
  auto f = ff::freeze([](const ff::Float& x) {
    ff::Float all = ff::dist::all_gather(x);
    if (all.size() > 4)  // a guard read after the collective
      return all * 2.f;
    return all + 1.f;
  });
  auto g = ff::freeze([&](const ff::Float& x) { return f(x) * 3.f; });
  (void)f(ff::Float::from({1.f})).to_vector();  // records: 1 element per rank
  (void)f(ff::Float::from({2.f})).to_vector();  // replays
  std::printf("rank %d: recorded and replayed\n", r);
  std::fflush(stdout);
  // g records; f replays inside its recording. Rank 0 sends 5: the guard fails after the
  // all_gather, on every rank.
  (void)g(ff::Float::from(std::vector<float>(r == 0 ? 5 : 1, 3.f))).to_vector();
  std::printf("rank %d: the failed replay returned instead of ending every rank\n", r);
  ff::dist::finalize();
  return 1;
}
