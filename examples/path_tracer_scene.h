// The path tracer example's scene and sampling constants, shared by the freezeframe tracer
// (path_tracer.cpp) and the hand-written OpenMP tracer (path_tracer_ref.cpp). Plain data, no
// freezeframe header: path_tracer_ref.cpp is compiled with its own flags.
//
// Both tracers follow the same algorithm, step for step and draw for draw, so that pixel i
// draws the same PCG32 sequence (stream kSeedSequence + i) in both:
//
//   camera ray through pixel (px, py) jittered by two draws (jx, jy)
//   for depth = 0 .. kMaxDepth-1 while the path is alive:
//     nearest sphere hit (a miss sees the sky)
//     emissive hit or miss: radiance += throughput * emission; the path ends
//     diffuse hit:  two draws for a cosine-weighted direction around the normal;
//                   throughput *= albedo;
//                   if depth + 1 >= kRouletteDepth: one draw u, q = min(max(throughput), 0.95);
//                   the path ends if u >= q, else throughput /= q
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace pt {

struct Sphere {
  float cx, cy, cz;  // centre
  float radius;
  float r, g, b;  // albedo (diffuse) or emitted radiance (emissive)
  uint32_t material;
};

inline constexpr uint32_t kDiffuse = 0;
inline constexpr uint32_t kEmissive = 1;

// A big ground sphere, three diffuse spheres on it and a spherical light above them.
inline constexpr std::array<Sphere, 5> kSpheres = {{
    {0.f, -1000.f, 0.f, 1000.f, 0.72f, 0.72f, 0.68f, kDiffuse},  // ground
    {-1.15f, 0.5f, 0.1f, 0.5f, 0.85f, 0.25f, 0.2f, kDiffuse},    // red
    {0.f, 0.6f, -0.35f, 0.6f, 0.3f, 0.75f, 0.35f, kDiffuse},     // green
    {1.1f, 0.45f, 0.25f, 0.45f, 0.25f, 0.4f, 0.85f, kDiffuse},   // blue
    {0.6f, 2.6f, 1.3f, 0.55f, 14.f, 12.f, 9.f, kEmissive},       // light
}};

// Radiance of a ray that hits nothing: a constant sky.
inline constexpr float kSkyR = 0.3f, kSkyG = 0.4f, kSkyB = 0.55f;

// Pinhole camera: eye, look-at point, vertical field of view.
inline constexpr float kEyeX = 0.f, kEyeY = 1.3f, kEyeZ = 4.6f;
inline constexpr float kLookX = 0.f, kLookY = 0.55f, kLookZ = 0.f;
inline constexpr float kFovYDegrees = 40.f;

inline constexpr uint32_t kMaxDepth = 8;       // bounces per path at most
inline constexpr uint32_t kRouletteDepth = 3;  // Russian roulette from this many bounces on
inline constexpr float kMaxSurvival = 0.95f;
inline constexpr float kHitEpsilon = 1e-4f;  // nearest accepted hit distance
inline constexpr float kOffset = 1e-3f;      // new rays start this far off the surface
inline constexpr float kTwoPi = 6.28318530718f;

// PCG32 seeding: pixel i uses stream kSeedSequence + i.
inline constexpr uint64_t kSeedState = 0x853c49e6748fea9bull;
inline constexpr uint64_t kSeedSequence = 7;

/// The camera's orthonormal basis scaled for the image: a ray through normalised image
/// coordinates (sx, sy) in [-1, 1]^2 (sy up) has direction
/// forward + sx * right + sy * up (before normalisation).
struct Camera {
  float fx, fy, fz;  // forward (unit)
  float rx, ry, rz;  // right * tan(fov/2) * aspect
  float ux, uy, uz;  // up * tan(fov/2)
};

/// The camera for a width x height image (computed in double and rounded once; both tracers
/// use its floats).
inline Camera make_camera(uint32_t width, uint32_t height) {
  double f[3] = {kLookX - kEyeX, kLookY - kEyeY, kLookZ - kEyeZ};
  const double fl = std::sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
  for (double& c : f)
    c /= fl;
  // right = forward x world up (0, 1, 0); up = right x forward.
  double r[3] = {-f[2], 0.0, f[0]};
  const double rl = std::sqrt(r[0] * r[0] + r[2] * r[2]);
  for (double& c : r)
    c /= rl;
  const double u[3] = {r[1] * f[2] - r[2] * f[1], r[2] * f[0] - r[0] * f[2],
                       r[0] * f[1] - r[1] * f[0]};
  const double t = std::tan(kFovYDegrees * 0.5 * 3.14159265358979323846 / 180.0);
  const double aspect = static_cast<double>(width) / static_cast<double>(height);
  auto c = [](double v) { return static_cast<float>(v); };
  return Camera{c(f[0]),
                c(f[1]),
                c(f[2]),
                c(r[0] * t * aspect),
                c(r[1] * t * aspect),
                c(r[2] * t * aspect),
                c(u[0] * t),
                c(u[1] * t),
                c(u[2] * t)};
}

}  // namespace pt
