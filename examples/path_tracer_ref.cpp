// pt::openmp_frame (path_tracer_ref.h): the hand-written baseline of the path tracer example.
// Every step mirrors path_tracer.cpp operation for operation (same order of float operations,
// same draws), so the two differ only where std::sin / std::cos and freezeframe's sin / cos
// round differently.
#include "path_tracer_ref.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "path_tracer_scene.h"

namespace pt {
namespace {

struct Rng {
  uint64_t state, inc;

  uint32_t next_uint32() {
    const uint64_t old = state;
    state = old * 6364136223846793005ull + inc;
    const auto xorshifted = static_cast<uint32_t>(((old >> 18u) ^ old) >> 27u);
    const auto rot = static_cast<uint32_t>(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((0u - rot) & 31u));
  }

  float next_float() { return static_cast<float>(next_uint32() >> 9u) * (1.f / 8388608.f); }
};

// One path through pixel i; returns its radiance in (lr, lg, lb).
void trace_pixel(Rng& rng, const Camera& cam, uint32_t px, uint32_t py, float sx_scale,
                 float sy_scale, float& lr, float& lg, float& lb) {
  const float jx = rng.next_float();
  const float jy = rng.next_float();
  const float sx = (static_cast<float>(px) + jx) * sx_scale - 1.f;
  const float sy = 1.f - (static_cast<float>(py) + jy) * sy_scale;
  float dx = cam.fx + sx * cam.rx + sy * cam.ux;
  float dy = cam.fy + sx * cam.ry + sy * cam.uy;
  float dz = cam.fz + sx * cam.rz + sy * cam.uz;
  const float inv_len = 1.f / std::sqrt(dx * dx + dy * dy + dz * dz);
  dx = dx * inv_len;
  dy = dy * inv_len;
  dz = dz * inv_len;
  float ox = kEyeX, oy = kEyeY, oz = kEyeZ;
  float tr = 1.f, tg = 1.f, tb = 1.f;
  lr = 0.f;
  lg = 0.f;
  lb = 0.f;
  bool alive = true;
  for (uint32_t depth = 0; alive && depth < kMaxDepth; ++depth) {
    // Nearest hit; the sky when none.
    float t = std::numeric_limits<float>::infinity();
    size_t hit = kSpheres.size();
    for (size_t s = 0; s < kSpheres.size(); ++s) {
      const Sphere& sp = kSpheres[s];
      const float ocx = ox - sp.cx, ocy = oy - sp.cy, ocz = oz - sp.cz;
      const float b = ocx * dx + ocy * dy + ocz * dz;
      const float fx = ocx - b * dx, fy = ocy - b * dy, fz = ocz - b * dz;
      const float disc = sp.radius * sp.radius - (fx * fx + fy * fy + fz * fz);
      const float sq = std::sqrt(std::max(disc, 0.f));
      const float tn = -b - sq, tf = -b + sq;
      const float th = tn > kHitEpsilon ? tn : tf;
      if (disc >= 0.f && th > kHitEpsilon && th < t) {
        t = th;
        hit = s;
      }
    }
    if (hit == kSpheres.size() || kSpheres[hit].material == kEmissive) {
      const float er = hit == kSpheres.size() ? kSkyR : kSpheres[hit].r;
      const float eg = hit == kSpheres.size() ? kSkyG : kSpheres[hit].g;
      const float eb = hit == kSpheres.size() ? kSkyB : kSpheres[hit].b;
      lr = lr + tr * er;
      lg = lg + tg * eg;
      lb = lb + tb * eb;
      alive = false;
      continue;
    }
    // Diffuse: a cosine-weighted direction around the normal (Duff et al.'s basis).
    const Sphere& sp = kSpheres[hit];
    const float inv_r = 1.f / sp.radius;
    const float hx = ox + t * dx, hy = oy + t * dy, hz = oz + t * dz;
    const float nx = (hx - sp.cx) * inv_r, ny = (hy - sp.cy) * inv_r, nz = (hz - sp.cz) * inv_r;
    const float u1 = rng.next_float();
    const float u2 = rng.next_float();
    const float r = std::sqrt(u1);
    const float phi = u2 * kTwoPi;
    const float lx = r * std::cos(phi), ly = r * std::sin(phi);
    const float lz = std::sqrt(std::max(1.f - u1, 0.f));
    const float sign = std::copysign(1.f, nz);
    const float a = -1.f / (sign + nz);
    const float bb = nx * ny * a;
    const float t1x = 1.f + sign * nx * nx * a, t1y = sign * bb, t1z = -sign * nx;
    const float t2x = bb, t2y = sign + ny * ny * a, t2z = -ny;
    dx = t1x * lx + t2x * ly + nx * lz;
    dy = t1y * lx + t2y * ly + ny * lz;
    dz = t1z * lx + t2z * ly + nz * lz;
    ox = hx + nx * kOffset;
    oy = hy + ny * kOffset;
    oz = hz + nz * kOffset;
    tr = tr * sp.r;
    tg = tg * sp.g;
    tb = tb * sp.b;
    if (depth + 1 >= kRouletteDepth) {
      const float u = rng.next_float();
      const float q = std::min(std::max(std::max(tr, tg), tb), kMaxSurvival);
      if (u >= q) {
        alive = false;
      } else {
        tr = tr / q;
        tg = tg / q;
        tb = tb / q;
      }
    }
  }
}

}  // namespace

void reference_seed(uint64_t* state, uint64_t* inc, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    Rng rng{0, ((kSeedSequence + i) << 1u) | 1u};
    rng.next_uint32();
    rng.state += kSeedState;
    rng.next_uint32();
    state[i] = rng.state;
    inc[i] = rng.inc;
  }
}

int openmp_frame(uint64_t* state, const uint64_t* inc, float* accum_r, float* accum_g,
                 float* accum_b, uint32_t width, uint32_t height, int n_threads) {
  const Camera cam = make_camera(width, height);
  const float sx_scale = 2.f / static_cast<float>(width);
  const float sy_scale = 2.f / static_cast<float>(height);
  const auto n = static_cast<std::ptrdiff_t>(width) * static_cast<std::ptrdiff_t>(height);
  int ran = 1;
#if defined(_OPENMP)
#pragma omp parallel num_threads(n_threads)
#else
  (void)n_threads;
#endif
  {
#if defined(_OPENMP)
    if (omp_get_thread_num() == 0)
      ran = omp_get_num_threads();
#pragma omp for schedule(dynamic, 64)
#endif
    for (std::ptrdiff_t i = 0; i < n; ++i) {
      Rng rng{state[i], inc[i]};
      float lr, lg, lb;
      trace_pixel(rng, cam, static_cast<uint32_t>(i % width), static_cast<uint32_t>(i / width),
                  sx_scale, sy_scale, lr, lg, lb);
      state[i] = rng.state;
      accum_r[i] = accum_r[i] + lr;
      accum_g[i] = accum_g[i] + lg;
      accum_b[i] = accum_b[i] + lb;
    }
  }
  return ran;
}

}  // namespace pt
