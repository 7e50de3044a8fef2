// A frozen call whose replay fails after its first collective: a size guard on an all_gather's
// result (6 elements now, at most 4 when recorded). The rank cannot raise and leave the others
// waiting in the next collective, so every rank ends (MPI_Abort) with a message on ff.dist; the
// test passes when that message appears (CTest's PASS_REGULAR_EXPRESSION) within its timeout.
#include <freezeframe/freezeframe.h>

#include <cstdio>

int main(int argc, char** argv) {
  ff::dist::init(argc, argv);
  int r = ff::dist::rank();
  auto f = ff::freeze([](const ff::Float& x) {
    ff::Float all = ff::dist::all_gather(x);
    if (all.size() > 4)  // a guard read after the collective
      return all * 2.f;
    return all + 1.f;
  });
  (void)f(ff::Float::from({1.f})).to_vector();  // records: 1 element per rank
  (void)f(ff::Float::from({2.f})).to_vector();  // replays
  std::printf("rank %d: recorded and replayed\n", r);
  std::fflush(stdout);
  // Rank 0 now sends 5: the guard fails after the all_gather, on every rank.
  (void)f(ff::Float::from(std::vector<float>(r == 0 ? 5 : 1, 3.f))).to_vector();
  std::printf("rank %d: the failed replay returned instead of ending every rank\n", r);
  ff::dist::finalize();
  return 1;
}
