// The distributed heat step of examples/heat_dist.cpp, shared with bench/dist_bench.cpp: the
// demo's plate split by rows over MPI ranks, one halo row above and below each band.
#pragma once

#include <freezeframe/freezeframe.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "heat_loop.h"

namespace heat_dist {

/// The rows [begin, end) of an n-row plate that rank r of `ranks` owns (as even as can be).
struct Band {
  uint32_t begin, end;
};

inline Band band_of(int r, int ranks, uint32_t n) {
  auto at = [&](int k) {
    return static_cast<uint32_t>(uint64_t{n} * static_cast<uint64_t>(k) /
                                 static_cast<uint64_t>(ranks));
  };
  return {at(r), at(r + 1)};
}

/// Fills the halo rows of a local grid `u` ((rows + 2) x n cells: a halo row, the owned rows,
/// a halo row) with the neighbours' edge rows: the row above this band comes from the rank
/// before this one, the row below from the rank after it (at the plate's edges there is none:
/// nothing is sent or received). The peers are relative to the calling rank and the row count
/// comes from u's size, so a recording of this replays on every rank (ff::dist::share).
/// `u` is written in place when it is the only reference to its buffer (a step's own result).
inline void exchange_halos(ff::Float& u, uint32_t n) {
  ff::Size owned_end = ff::width(u) - n;  // (rows + 1) * n: where the halo below starts
  ff::UInt32 row = ff::arange<ff::UInt32>(n);
  ff::Float first = ff::gather<ff::Float>(u, row + n);  // first owned row
  ff::Float last = ff::gather<ff::Float>(u, row + ff::from_size<ff::UInt32>(owned_end - n));
  ff::dist::Peer up = ff::dist::relative(-1), down = ff::dist::relative(+1);
  ff::Float from_up = ff::dist::sendrecv(last, down, up);     // the row above this band
  ff::Float from_down = ff::dist::sendrecv(first, up, down);  // the row below it
  ff::scatter(u, from_up, ff::arange<ff::UInt32>(ff::width(from_up)));
  ff::scatter(u, from_down,
              ff::arange<ff::UInt32>(ff::width(from_down)) + ff::from_size<ff::UInt32>(owned_end));
}

/// One step on a local grid `u` whose halo rows hold the neighbours' rows: the stencil on the
/// owned rows whose global row is inside the plate, then the halo exchange on the result (in
/// place: the result is this step's own buffer, so no copy of the grid is made), so the next
/// step finds its halos filled. The band's first global row is computed from the rank as an
/// expression (band_of's formula on ff::dist::rank_expr()), so one recording serves every
/// rank.
inline ff::Float local_step(const ff::Float& u, uint32_t n) {
  ff::Size rows = ff::width(u) / n - 2;
  ff::Size begin = ff::dist::rank_expr() * n / ff::dist::size_expr();  // band_of(r).begin
  ff::UInt32 i = ff::arange<ff::UInt32>(ff::width(u));
  ff::UInt32 x = i % n;
  ff::UInt32 y = i / n;                                      // local row: 0 and rows + 1 are halos
  ff::UInt32 gy = y + ff::from_size<ff::UInt32>(begin) - 1;  // global row (wraps above row 0)
  ff::Bool interior = (x > 0u) & (x < n - 1) & (y > 0u) & (y <= ff::from_size<ff::UInt32>(rows)) &
                      (gy > 0u) & (gy < n - 1);
  // The same expression as heat::diffuse, in the same order: the results agree bit for bit.
  ff::Float left = ff::gather<ff::Float>(u, i - 1u, interior);
  ff::Float right = ff::gather<ff::Float>(u, i + 1u, interior);
  ff::Float top = ff::gather<ff::Float>(u, i - n, interior);
  ff::Float bottom = ff::gather<ff::Float>(u, i + n, interior);
  ff::Float sum = left + right + top + bottom;
  ff::Float next = ff::select(interior, u + ff::Float(heat::kAlpha) * (sum - 4.f * u), u);
  ff::eval(next);
  exchange_halos(next, n);
  ff::eval(next);
  return next;
}

/// The starting plate: a hot top edge and a warm square inside.
inline std::vector<float> initial_plate(uint32_t n) {
  std::vector<float> u(size_t{n} * n, 0.f);
  for (uint32_t x = 0; x < n; ++x)
    u[x] = 100.f;  // a hot top edge
  for (uint32_t y = n / 4; y < n / 2; ++y)
    for (uint32_t x = n / 4; x < n / 2; ++x)
      u[size_t{y} * n + x] = 50.f;  // and a warm square inside
  return u;
}

/// What rank r of `ranks` holds of the n x n starting plate: its band and its local grid (the
/// band's rows with a halo row on each side, zeros until exchange_halos).
struct Local {
  Band band;
  uint32_t rows;
  std::vector<float> plate, grid;
};

inline Local local_plate(int r, int ranks, uint32_t n) {
  Local l;
  l.band = band_of(r, ranks, n);
  l.rows = l.band.end - l.band.begin;
  l.plate = initial_plate(n);
  l.grid.assign(size_t{l.rows + 2} * n, 0.f);
  std::copy(l.plate.begin() + static_cast<long>(size_t{l.band.begin} * n),
            l.plate.begin() + static_cast<long>(size_t{l.band.end} * n), l.grid.begin() + n);
  return l;
}

/// The whole plate on every rank: each rank's owned rows of `u`, gathered in rank order.
inline std::vector<float> gather_plate(const ff::Float& u, const Local& l, uint32_t n) {
  ff::UInt32 owned = ff::arange<ff::UInt32>(l.rows * n) + n;
  return ff::dist::all_gather(ff::gather<ff::Float>(u, owned)).to_vector();
}

}  // namespace heat_dist
