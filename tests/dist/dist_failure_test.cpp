// A replay that fails after it has issued a collective, under mpirun with 1, 2 and 3 ranks (part
// of ff_tests_dist: every rank runs every case in the same order). Every rank agrees before each
// collective of a recording after its first, and at its end where a guard could fail after the
// last one, so such a failure reaches every rank: a size guard makes every rank try the call's
// other paths, any other error raises on every rank. An error after the last agreement is the
// failing rank's alone (nobody waits for it). A rank that records the call while the others
// replay it makes the same agreements.
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "backend/command_list.h"
#include "backend/forwarding_backend.h"
#include "backend/llvm/llvm_backend.h"
#include "frontend/recording_state.h"
#include "replay/replay_plan.h"
#include "replay/replayer.h"

namespace {

int ranks() {
  return ff::dist::size();
}

int me() {
  return ff::dist::rank();
}

int next_rank(int r) {
  return (r + 1) % ranks();
}

int prev_rank(int r) {
  return (r + ranks() - 1) % ranks();
}

/// Rank r's input: `size(r)` copies of r + 1.
template <class Sizes>
ff::Float input(Sizes size) {
  return ff::Float::from(std::vector<float>(size(me()), static_cast<float>(me() + 1)));
}

/// The body of the two-collective step below, on the host: each rank receives its left
/// neighbour's array, doubles it where it has more than 4 elements (else adds 1), and the ranks
/// sum all of it.
template <class Sizes>
float two_collective_total(Sizes size) {
  float total = 0.f;
  for (int k = 0; k < ranks(); ++k) {
    int from = prev_rank(k);
    auto v = static_cast<float>(from + 1);
    float y = size(from) > 4 ? v * 2.f : v + 1.f;
    total += static_cast<float>(size(from)) * y;
  }
  return total;
}

/// A sendrecv, a size guard on what arrived, then an all_reduce: the guard sits between two
/// collectives. `tag` is part of the key only (a rank that passes another records the call).
auto two_collective_step(const char* name) {
  return ff::freeze(
      [](const ff::Float& x, int tag) {
        (void)tag;
        ff::Float got = ff::dist::sendrecv(x, next_rank(me()), prev_rank(me()));
        ff::Float y = got.size() > 4 ? got * 2.f : got + 1.f;
        return ff::dist::all_reduce(ff::sum(y), ff::ReduceOp::Add);
      },
      ff::FreezeOptions{.name = name});
}

/// A sendrecv, then a size guard on what arrived: the guard follows the last collective.
ff::Float late_guard(const ff::Float& x) {
  ff::Float got = ff::dist::sendrecv(x, next_rank(me()), prev_rank(me()));
  return got.size() > 4 ? got * 2.f : got + 1.f;
}

/// late_guard() on the host, on this rank, where rank r's input has size(r) elements.
std::vector<float> late_guard_result(size_t (*size)(int)) {
  int from = prev_rank(me());
  auto v = static_cast<float>(from + 1);
  return std::vector<float>(size(from), size(from) > 4 ? v * 2.f : v + 1.f);
}

size_t one(int) {
  return 1;
}

size_t two(int) {
  return 2;
}

/// Rank 0 sends 5 elements: the rank after it (rank 0 itself with one rank) fails its guard.
size_t five_from_rank0(int r) {
  return r == 0 ? 5 : 1;
}

// The LLVM backend, failing every kernel launch while `armed`; with `batches`, it prefers
// command lists (the replay's Batching executor, as on CUDA), whose submit fails instead.
class FailingBackend final : public ff::ForwardingBackend {
 public:
  explicit FailingBackend(bool batches)
      : ForwardingBackend("failing:", ff::create_llvm_backend(ff::BackendOptions{})),
        batches_(batches) {}

  bool armed = false;

  bool prefers_command_lists() const override { return batches_; }

  size_t submit(const ff::CommandList& list) override {
    if (!armed)
      return Backend::submit(list);
    for (const ff::Command& c : list.commands)  // a failed submit still releases (backend.h)
      if (c.kind == ff::CommandKind::Release)
        release(c.dst);
    throw ff::BackendError("failing backend: this launch fails (test, a batch)");
  }

  void launch(const ff::KernelHandle& kernel, size_t size, ff::SizeProv prov,
              std::span<const ff::KernelArg> args) override {
    if (armed)
      throw ff::BackendError("failing backend: this launch fails (test)");
    inner().launch(kernel, size, prov, args);
  }

 private:
  bool batches_;
};

}  // namespace

TEST_CASE("dist: a guard failing between two collectives on one rank: every rank retries",
          "[agreement]") {
  auto step = two_collective_step("guard between collectives");
  CHECK(step(input(one), 0).to_vector() == std::vector<float>{two_collective_total(one)});
  CHECK(step(input(two), 0).to_vector() == std::vector<float>{two_collective_total(two)});
  CHECK(step.n_recordings() == 1);
  // The rank after rank 0 receives 5 elements: its guard fails after the sendrecv. It tells the
  // others in the agreement before the all_reduce; every rank leaves the replay and records the
  // call anew, and every result is right. Then the two paths alternate without new recordings.
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    CHECK(step(input(five_from_rank0), 0).to_vector() ==
          std::vector<float>{two_collective_total(five_from_rank0)});
    CHECK(step(input(one), 0).to_vector() == std::vector<float>{two_collective_total(one)});
    CHECK(step.n_recordings() == 2);
  }
}

TEST_CASE("dist: a rank that records while the others replay makes the same agreements",
          "[agreement]") {
  auto step = two_collective_step("one rank records");
  CHECK(step(input(one), 0).to_vector() == std::vector<float>{two_collective_total(one)});
  // Rank 0 alone passes another tag: it records (agreeing before the all_reduce and at the
  // end, as the replays do), the others replay.
  auto rank0_three = [](int r) -> size_t { return r == 0 ? 3 : 2; };
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    CHECK(step(input(rank0_three), me() == 0 ? 7 : 0).to_vector() ==
          std::vector<float>{two_collective_total(rank0_three)});
  }
  CHECK(step.n_recordings() == (me() == 0 ? 2u : 1u));
}

TEST_CASE("dist: a replay's guard failing while another rank records raises on every rank",
          "[agreement]") {
  auto step = two_collective_step("guard while recording");
  auto rank0_six = [](int r) -> size_t { return r == 0 ? 6 : 1; };
  CHECK(step(input(one), 0).to_vector() == std::vector<float>{two_collective_total(one)});
  // Rank 0 records (another tag) and sends 6 elements; rank 1 replays and its guard fails
  // between the collectives. The recording rank cannot retry, so every rank raises. With one
  // rank, rank 0 records its own call and nothing fails.
  int tag = me() == 0 ? 7 : 0;
  if (ranks() == 1) {
    CHECK(step(input(rank0_six), tag).to_vector() ==
          std::vector<float>{two_collective_total(rank0_six)});
  } else {
    CHECK_THROWS_WITH(step(input(rank0_six), tag), Catch::Contains("every rank raises"));
    // The same call again: the rank whose guard failed skips that recording and records too,
    // and every rank has its result; then every rank replays.
    for (int round = 0; round < 2; ++round)
      CHECK(step(input(rank0_six), tag).to_vector() ==
            std::vector<float>{two_collective_total(rank0_six)});
  }
  // The next call lines up on every rank.
  CHECK(step(input(two), 0).to_vector() == std::vector<float>{two_collective_total(two)});
}

TEST_CASE("dist: a guard failing after the last collective on one rank: every rank retries",
          "[agreement]") {
  auto step = ff::freeze([](const ff::Float& x) { return late_guard(x); },
                         ff::FreezeOptions{.name = "guard after collectives"});
  auto want = late_guard_result;
  CHECK(step(input(one)).to_vector() == want(one));
  CHECK(step(input(two)).to_vector() == want(two));
  // The rank after rank 0 fails its guard after the sendrecv, the last collective. The
  // recording agrees at its end: every rank retries (it may not record alone: its sendrecv
  // would meet the others' next collective), records anew, and every result is right.
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    CHECK(step(input(five_from_rank0)).to_vector() == want(five_from_rank0));
    CHECK(step(input(one)).to_vector() == want(one));
  }
  CHECK(step.n_recordings() == 2);
}

TEST_CASE("dist: a size guard after an all_gather failing on every rank: every rank retries",
          "[agreement]") {
  auto step = ff::freeze([](const ff::Float& x) {
    ff::Float all = ff::dist::all_gather(x);
    return all.size() > 4 ? all * 2.f : all + 1.f;
  });
  auto want = [](size_t (*size)(int)) {
    std::vector<float> out;
    for (int k = 0; k < ranks(); ++k)
      out.insert(out.end(), size(k), static_cast<float>(k + 1));
    for (float& v : out)
      v = out.size() > 4 ? v * 2.f : v + 1.f;
    return out;
  };
  CHECK(step(input(one)).to_vector() == want(one));
  CHECK(step(input(one)).to_vector() == want(one));
  CHECK(step(input(five_from_rank0)).to_vector() == want(five_from_rank0));
  CHECK(step(input(five_from_rank0)).to_vector() == want(five_from_rank0));
  CHECK(step.n_recordings() == 2);
  CHECK(step.n_replays() == 2);
}

TEST_CASE("dist: an error in a replay after a collective raises on every rank while one waits",
          "[agreement]") {
  // Replayed below the public API on a backend whose launches fail on rank 0: two all_reduces
  // with a kernel between them (the others wait in the second), and one all_reduce with the
  // kernel after it (nobody waits: rank 0 raises alone, the others have their results).
  ff::Float x = ff::Float::from({1.f, 2.f, 3.f});
  ff::Recording between = ff::record({x}, [&] {
    ff::Float a = ff::dist::all_reduce(x, ff::ReduceOp::Add);
    return std::vector<ff::AnyArray>{ff::dist::all_reduce(a * 2.f, ff::ReduceOp::Add)};
  });
  ff::Recording after = ff::record({x}, [&] {
    return std::vector<ff::AnyArray>{ff::dist::all_reduce(x, ff::ReduceOp::Add) * 2.f};
  });
  for (bool batches : {false, true}) {
    INFO((batches ? "batched (command lists)" : "op by op"));
    FailingBackend backend(batches);
    ff::replay::ReplayPlan plan_between(ff::detail::recording_state(between)->data, backend);
    ff::replay::ReplayPlan plan_after(ff::detail::recording_state(after)->data, backend);
    CHECK_FALSE(plan_between.agree_at_end);  // all_reduces exchange no sizes
    std::vector<float> xs{1.f, 2.f, 3.f};
    void* p = backend.alloc(ff::ScalarType::Float32, xs.size(), {});
    backend.copy(p, xs.data(), xs.size() * sizeof(float), ff::CopyKind::HostToDevice);
    ff::replay::ReplayInput in[] = {{p, ff::ScalarType::Float32, xs.size()}};
    uint64_t bytes_before = backend.stats().bytes_allocated;
    auto n = static_cast<float>(ranks());
    auto read = [&](const std::vector<ff::replay::ReplayOutput>& outs) {
      REQUIRE(outs.size() == 1);
      std::vector<float> got(outs[0].size);
      backend.copy(got.data(), outs[0].ptr, got.size() * sizeof(float), ff::CopyKind::DeviceToHost);
      backend.release(outs[0].ptr);
      return got;
    };

    backend.armed = me() == 0;
    if (me() == 0)
      CHECK_THROWS_WITH(ff::replay::run(plan_between, backend, in, {}),
                        Catch::Contains("this launch fails"));
    else
      CHECK_THROWS_WITH(ff::replay::run(plan_between, backend, in, {}),
                        Catch::Contains("rank 0 failed") && Catch::Contains("every rank raises"));
    CHECK(backend.stats().bytes_allocated == bytes_before);

    if (me() == 0)
      CHECK_THROWS_AS(ff::replay::run(plan_after, backend, in, {}), ff::BackendError);
    else
      CHECK(read(ff::replay::run(plan_after, backend, in, {})) ==
            std::vector<float>{2.f * n, 4.f * n, 6.f * n});
    CHECK(backend.stats().bytes_allocated == bytes_before);

    // The next replays line up on every rank.
    backend.armed = false;
    CHECK(read(ff::replay::run(plan_between, backend, in, {})) ==
          std::vector<float>{2.f * n * n, 4.f * n * n, 6.f * n * n});
    CHECK(read(ff::replay::run(plan_after, backend, in, {})) ==
          std::vector<float>{2.f * n, 4.f * n, 6.f * n});
    backend.release(p);
  }
}

TEST_CASE("dist: ranks whose recordings differ in their guards make the same agreements",
          "[agreement]") {
  // Only rank 0 reads the gathered size (a guard after the collective), and the ranks' own
  // sizes take different paths: the agreements follow the kinds of collectives, which every
  // rank shares, not the guards, so nothing waits (a hang fails the CTest timeout).
  auto rank0_reads = ff::freeze([](const ff::Float& x) {
    ff::Float all = ff::dist::all_gather(x);
    if (me() == 0)
      return all.size() > 4 ? all * 2.f : all + 1.f;
    return all * 3.f;
  });
  auto by_own_size = ff::freeze([](const ff::Float& x) {
    ff::Float all = ff::dist::all_gather(x);
    if (x.size() > 2)  // rank 0 has 3 elements, the others 1
      return all.size() > 6 ? all * 2.f : all + 1.f;
    return all * 3.f;
  });
  auto rank0_three = [](int r) -> size_t { return r == 0 ? 3 : 1; };
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    CHECK(rank0_reads(input(one)).to_vector().size() == static_cast<size_t>(ranks()));
    CHECK(by_own_size(input(rank0_three)).to_vector().size() == static_cast<size_t>(ranks()) + 2);
  }
  CHECK(rank0_reads.n_recordings() == 1);
  CHECK(by_own_size.n_recordings() == 1);
}

/// `step(x, tag)` records on rank 0 with tag 7 and its recording is refused after a collective
/// (it reads an array that is no argument), while the others replay the tag-0 call: every rank
/// raises, and the next collective and the next call line up.
template <class Step>
void check_refusal_reaches_every_rank(Step& step, const std::vector<float>& want) {
  CHECK(step(input(two), 0).to_vector() == want);
  if (me() == 0) {
    CHECK_THROWS_AS(step(input(two), 7), ff::FreezeError);
  } else {
    CHECK_THROWS_WITH(step(input(two), 0),
                      Catch::Contains("rank 0 failed") && Catch::Contains("every rank raises"));
  }
  CHECK(ff::dist::all_reduce(ff::Float::from({0.5f}), ff::ReduceOp::Add).to_vector() ==
        std::vector<float>{0.5f * static_cast<float>(ranks())});
  CHECK(step(input(two), 0).to_vector() == want);
}

TEST_CASE("dist: a recording refused after a collective tells the replaying ranks", "[agreement]") {
  ff::Float outside = ff::Float::from({10.f, 20.f});
  ff::eval(outside);
  // After the last collective: the others wait in the agreement at the end.
  auto after_last = ff::freeze(
      [&](const ff::Float& x, int tag) {
        ff::Float got = ff::dist::sendrecv(x, next_rank(me()), prev_rank(me()));
        if (tag == 7)
          return got + ff::sum(outside);
        return got + 1.f;
      },
      ff::FreezeOptions{.name = "refused after the sendrecv"});
  check_refusal_reaches_every_rank(after_last,
                                   std::vector<float>(2, static_cast<float>(prev_rank(me()) + 2)));
  // At the second collective's own input: refused before that collective's agreement and
  // count exchange, not between them and its data, so the others learn it in the agreement.
  auto at_input = ff::freeze(
      [&](const ff::Float& x, int tag) {
        ff::Float got = ff::dist::sendrecv(x, next_rank(me()), prev_rank(me()));
        return ff::dist::all_reduce(tag == 7 ? outside : got + 1.f, ff::ReduceOp::Add);
      },
      ff::FreezeOptions{.name = "refused at a collective's input"});
  float each = 0.f;  // every rank's got + 1, summed: (k + 1) + 1 over the ranks k
  for (int k = 0; k < ranks(); ++k)
    each += static_cast<float>(k + 2);
  check_refusal_reaches_every_rank(at_input, std::vector<float>(2, each));
}

TEST_CASE(
    "dist: a guard failing after the last collective beside a recording rank: every rank "
    "raises, and the next call succeeds",
    "[agreement]") {
  auto step = ff::freeze(
      [](const ff::Float& x, int tag) {
        (void)tag;
        return late_guard(x);
      },
      ff::FreezeOptions{.name = "late guard beside a recording"});
  auto want = late_guard_result;
  CHECK(step(input(one), 0).to_vector() == want(one));
  // Rank 0 records (another tag) and sends 5: the rank after it replays, and its guard fails
  // after the sendrecv. Rank 0's recording is complete when the end agreement tells it: it
  // keeps it and raises with the others. The next call, the failed rank skips the recording
  // whose guard failed and records, rank 0 replays what it kept.
  int tag = me() == 0 ? 7 : 0;
  if (ranks() == 1) {
    CHECK(step(input(five_from_rank0), tag).to_vector() == want(five_from_rank0));
  } else {
    CHECK_THROWS_WITH(step(input(five_from_rank0), tag), Catch::Contains("every rank raises"));
    for (int round = 0; round < 2; ++round)
      CHECK(step(input(five_from_rank0), tag).to_vector() == want(five_from_rank0));
    CHECK(step.n_recordings() == (me() == 0 || me() == next_rank(0) ? 2u : 1u));
  }
  CHECK(step(input(one), 0).to_vector() == want(one));
}
