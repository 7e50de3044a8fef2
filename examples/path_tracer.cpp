// freezeframe example: a small path tracer whose bounce loop runs inside the kernel.
//
// A frame traces one path per pixel through an analytic scene (path_tracer_scene.h: a ground
// sphere, three diffuse spheres, a spherical light, a constant sky) seen by a pinhole camera.
// The bounces are an ff::while_loop whose state is the path (ray, throughput, radiance, the
// pixel's ff::PCG32, depth and an alive flag); each iteration finds the nearest sphere (a loop
// over the few spheres unrolled in C++), then an ff::switch_ on the hit's material runs the
// emissive target (adds the emission, ends the path) or the diffuse one (a cosine-weighted
// bounce, Russian roulette from the third bounce on). The frame adds its radiance to the
// accumulated image. The whole frame is one kernel.
//
// The frame runs traced (every frame traced again) and frozen with ff::freeze (the first call
// records, the others replay); the example checks that both give the same image, bit for bit,
// and compares them with the same tracer written by hand as an OpenMP loop
// (path_tracer_ref.cpp), which draws the same PCG32 numbers per pixel.
//
//   ff_path_tracer [--width W] [--height H] [--frames F] [--out image.ppm]
//                  defaults: 256 x 256, 8 frames, no image written
#include <freezeframe/freezeframe.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "path_tracer_ref.h"
#include "path_tracer_scene.h"

namespace {

using ff::Bool;
using ff::Float;
using ff::UInt32;

struct Vec3 {
  Float x, y, z;
};

// One path per lane: the state of the bounce loop.
struct Path {
  Vec3 origin, direction;
  Vec3 throughput, radiance;
  ff::PCG32 rng;
  UInt32 depth;
  Bool alive;
};

// The accumulated image (sum of all frames' radiance), one plane per channel.
struct Image {
  Float r, g, b;
};

}  // namespace

FF_STRUCT(Vec3, x, y, z)
FF_STRUCT(Path, origin, direction, throughput, radiance, rng, depth, alive)
FF_STRUCT(Image, r, g, b)

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The nearest hit along a path's ray: distance, the sphere's centre and 1/radius, its colour
// (albedo or emission; the sky's radiance on a miss) and its material (a miss is emissive).
struct Hit {
  Float t;
  Vec3 centre;
  Float inv_radius;
  Vec3 color;
  UInt32 material;
};

// The spheres are few: one test per sphere, unrolled here, each a handful of selects.
Hit intersect(const Path& p) {
  const Vec3& o = p.origin;
  const Vec3& d = p.direction;
  Hit h{Float(std::numeric_limits<float>::infinity()),
        {Float(0.f), Float(0.f), Float(0.f)},
        Float(0.f),
        {Float(pt::kSkyR), Float(pt::kSkyG), Float(pt::kSkyB)},
        UInt32(pt::kEmissive)};
  for (const pt::Sphere& s : pt::kSpheres) {
    Float ocx = o.x - s.cx, ocy = o.y - s.cy, ocz = o.z - s.cz;
    Float b = ocx * d.x + ocy * d.y + ocz * d.z;
    // The distance of the centre from the ray, computed from the closest point: stable for the
    // big ground sphere, where b * b - c would cancel.
    Float fx = ocx - b * d.x, fy = ocy - b * d.y, fz = ocz - b * d.z;
    Float disc = s.radius * s.radius - (fx * fx + fy * fy + fz * fz);
    Float sq = ff::sqrt(ff::max(disc, 0.f));
    Float tn = -b - sq, tf = -b + sq;
    Float th = ff::select(tn > pt::kHitEpsilon, tn, tf);
    Bool hit = (disc >= 0.f) & (th > pt::kHitEpsilon) & (th < h.t);
    h.t = ff::select(hit, th, h.t);
    h.centre = {ff::select(hit, s.cx, h.centre.x), ff::select(hit, s.cy, h.centre.y),
                ff::select(hit, s.cz, h.centre.z)};
    h.inv_radius = ff::select(hit, 1.f / s.radius, h.inv_radius);
    h.color = {ff::select(hit, s.r, h.color.x), ff::select(hit, s.g, h.color.y),
               ff::select(hit, s.b, h.color.z)};
    h.material = ff::select(hit, s.material, h.material);
  }
  return h;
}

// Emissive hit or miss: adds the emission, ends the path.
Path emissive(const Path& p, const Hit& h) {
  Path q = p;
  q.radiance = {p.radiance.x + p.throughput.x * h.color.x,
                p.radiance.y + p.throughput.y * h.color.y,
                p.radiance.z + p.throughput.z * h.color.z};
  q.alive = Bool(false);
  return q;
}

// Diffuse hit: a cosine-weighted direction around the normal, then Russian roulette.
Path diffuse(const Path& p, const Hit& h) {
  Path q = p;
  const Vec3& o = p.origin;
  const Vec3& d = p.direction;
  Float hx = o.x + h.t * d.x, hy = o.y + h.t * d.y, hz = o.z + h.t * d.z;
  Float nx = (hx - h.centre.x) * h.inv_radius, ny = (hy - h.centre.y) * h.inv_radius,
        nz = (hz - h.centre.z) * h.inv_radius;
  Float u1 = q.rng.next_float();
  Float u2 = q.rng.next_float();
  Float r = ff::sqrt(u1);
  Float phi = u2 * pt::kTwoPi;
  Float lx = r * ff::cos(phi), ly = r * ff::sin(phi);
  Float lz = ff::sqrt(ff::max(1.f - u1, 0.f));
  // An orthonormal basis around n without branches (Duff et al. 2017).
  Float sign = ff::copysign(Float(1.f), nz);
  Float a = -1.f / (sign + nz);
  Float bb = nx * ny * a;
  Float t1x = 1.f + sign * nx * nx * a, t1y = sign * bb, t1z = -sign * nx;
  const Float& t2x = bb;
  Float t2y = sign + ny * ny * a, t2z = -ny;
  q.direction = {t1x * lx + t2x * ly + nx * lz, t1y * lx + t2y * ly + ny * lz,
                 t1z * lx + t2z * ly + nz * lz};
  q.origin = {hx + nx * pt::kOffset, hy + ny * pt::kOffset, hz + nz * pt::kOffset};
  Float tr = p.throughput.x * h.color.x, tg = p.throughput.y * h.color.y,
        tb = p.throughput.z * h.color.z;
  // Russian roulette: from kRouletteDepth bounces on, a path survives with probability q
  // (its largest throughput, at most kMaxSurvival) and its throughput is divided by q. Only
  // those lanes draw, so the generator takes the draw from a copy and keeps it where it applies.
  Bool roulette = p.depth + 1u >= pt::kRouletteDepth;
  ff::PCG32 next = q.rng;
  Float u = next.next_float();
  q.rng.state = ff::select(roulette, next.state, q.rng.state);
  Float survive = ff::min(ff::max(ff::max(tr, tg), tb), pt::kMaxSurvival);
  Bool dies = roulette & (u >= survive);
  Bool divide = roulette & !dies;
  q.throughput = {ff::select(divide, tr / survive, tr), ff::select(divide, tg / survive, tg),
                  ff::select(divide, tb / survive, tb)};
  q.alive = !dies;
  return q;
}

// One frame: one path per pixel, its radiance added to `accum`; advances every pixel's
// generator. `rng` has width * height lanes.
void render_frame(ff::PCG32& rng, Image& accum, uint32_t width, uint32_t height) {
  const pt::Camera cam = pt::make_camera(width, height);
  const float sx_scale = 2.f / static_cast<float>(width);
  const float sy_scale = 2.f / static_cast<float>(height);
  UInt32 pixel = ff::arange<UInt32>(ff::width(rng.state));
  Float px = ff::cast<Float>(pixel % width), py = ff::cast<Float>(pixel / width);
  Float jx = rng.next_float();
  Float jy = rng.next_float();
  Float sx = (px + jx) * sx_scale - 1.f;
  Float sy = 1.f - (py + jy) * sy_scale;
  Float dx = cam.fx + sx * cam.rx + sy * cam.ux;
  Float dy = cam.fy + sx * cam.ry + sy * cam.uy;
  Float dz = cam.fz + sx * cam.rz + sy * cam.uz;
  Float inv_len = 1.f / ff::sqrt(dx * dx + dy * dy + dz * dz);

  Path start{{Float(pt::kEyeX), Float(pt::kEyeY), Float(pt::kEyeZ)},
             {dx * inv_len, dy * inv_len, dz * inv_len},
             {Float(1.f), Float(1.f), Float(1.f)},
             {Float(0.f), Float(0.f), Float(0.f)},
             rng,
             UInt32(0u),
             Bool(true)};
  const std::array<std::function<Path(const Path&, const Hit&)>, 2> materials = {diffuse, emissive};
  static_assert(pt::kDiffuse == 0 && pt::kEmissive == 1);
  ff::LoopOptions opt;
  opt.name = "bounce";
  auto [path] = ff::while_loop(
      std::make_tuple(start), [](const Path& p) { return p.alive & (p.depth < pt::kMaxDepth); },
      [&](Path& p) {
        Hit h = intersect(p);
        p = ff::switch_(h.material, materials, p, h);
        p.depth = p.depth + 1u;
      },
      opt);

  rng.state = path.rng.state;
  accum.r = accum.r + path.radiance.x;
  accum.g = accum.g + path.radiance.y;
  accum.b = accum.b + path.radiance.z;
  ff::eval(accum.r, accum.g, accum.b, rng.state);
}

// A black image in buffers (ff::make_opaque): zeros would be literals, and the first frame
// (a kernel that reads literal zeros) would differ from the others (that read buffers).
Image black_image(size_t n) {
  Image img{ff::zeros<Float>(n), ff::zeros<Float>(n), ff::zeros<Float>(n)};
  ff::make_opaque(img.r, img.g, img.b);
  return img;
}

struct Timing {
  double first_ms = 0;   // the first frame (compiles, or records)
  double median_ms = 0;  // the median of the others: the machine may be busy with other work
};

// Runs `frame` `frames` times (>= 2), timing each.
template <class F>
Timing time_frames(int frames, F&& frame) {
  std::vector<double> ms;
  for (int f = 0; f < frames; ++f) {
    auto t0 = Clock::now();
    frame();
    ff::sync();
    ms.push_back(ms_since(t0));
  }
  std::sort(ms.begin() + 1, ms.end());
  const size_t k = ms.size() - 1;  // frames after the first
  return Timing{ms[0], k % 2 ? ms[1 + k / 2] : 0.5 * (ms[k / 2] + ms[1 + k / 2])};
}

// The average of `frames` frames, gamma 2.2, as a binary PPM.
bool write_ppm(const std::string& file, const std::vector<float>& r, const std::vector<float>& g,
               const std::vector<float>& b, uint32_t width, uint32_t height, int frames) {
  std::FILE* out = std::fopen(file.c_str(), "wb");
  if (!out)
    return false;
  std::fprintf(out, "P6\n%u %u\n255\n", width, height);
  std::vector<unsigned char> bytes;
  bytes.reserve(r.size() * 3);
  auto byte = [&](float v) {
    float c = std::pow(std::clamp(v / static_cast<float>(frames), 0.f, 1.f), 1.f / 2.2f);
    return static_cast<unsigned char>(std::lround(c * 255.f));
  };
  for (size_t i = 0; i < r.size(); ++i) {
    bytes.push_back(byte(r[i]));
    bytes.push_back(byte(g[i]));
    bytes.push_back(byte(b[i]));
  }
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size();
  return std::fclose(out) == 0 && ok;
}

int usage() {
  std::fprintf(stderr,
               "usage: ff_path_tracer [--width W] [--height H] [--frames F] [--out image.ppm]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t width = 256, height = 256;
  int frames = 8;
  std::string out_file;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--width") == 0 && i + 1 < argc)
      width = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 10));
    else if (std::strcmp(argv[i], "--height") == 0 && i + 1 < argc)
      height = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 10));
    else if (std::strcmp(argv[i], "--frames") == 0 && i + 1 < argc)
      frames = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc)
      out_file = argv[++i];
    else
      return usage();
  }
  if (width < 1 || height < 1 || width > 8192 || height > 8192 || frames < 2 || frames > 100000)
    return usage();
  const size_t n = size_t{width} * height;

  try {
    ff::init();
    std::printf(
        "freezeframe example: path tracer, %ux%u, %d frames of 1 sample per pixel, "
        "max depth %u, backend %s\n",
        width, height, frames, pt::kMaxDepth, ff::backend_name().c_str());

    // --- traced: every frame traces its operations again ---
    ff::PCG32 traced_rng;
    traced_rng.seed(n, pt::kSeedState, pt::kSeedSequence);
    ff::eval(traced_rng.state, traced_rng.inc);  // else the first frame's kernel seeds too
    Image traced = black_image(n);
    ff::sync();
    const ff::Stats s0 = ff::stats();
    const Timing traced_t =
        time_frames(frames, [&] { render_frame(traced_rng, traced, width, height); });
    const ff::Stats s1 = ff::stats();

    // --- frozen: the first call records, the others replay ---
    auto frozen_frame = ff::freeze(render_frame, ff::FreezeOptions{.name = "path tracer frame"});
    ff::PCG32 rng;
    rng.seed(n, pt::kSeedState, pt::kSeedSequence);
    ff::eval(rng.state, rng.inc);
    Image frozen = black_image(n);
    ff::sync();
    const Timing frozen_t = time_frames(frames, [&] { frozen_frame(rng, frozen, width, height); });

    // --- the same tracer by hand, OpenMP on freezeframe's threads ---
    const int threads = static_cast<int>(std::max<uint64_t>(1, ff::stats().threads));
    std::vector<uint64_t> ref_state(n), ref_inc(n);
    pt::reference_seed(ref_state.data(), ref_inc.data(), n);
    std::vector<float> ref_r(n, 0.f), ref_g(n, 0.f), ref_b(n, 0.f);
    int omp_threads = 0;
    const Timing omp_t = time_frames(frames, [&] {
      omp_threads = pt::openmp_frame(ref_state.data(), ref_inc.data(), ref_r.data(), ref_g.data(),
                                     ref_b.data(), width, height, threads);
    });

    // --- checks ---
    const std::vector<float> tr = traced.r.to_vector(), tg = traced.g.to_vector(),
                             tb = traced.b.to_vector();
    const std::vector<float> fr = frozen.r.to_vector(), fg = frozen.g.to_vector(),
                             fb = frozen.b.to_vector();
    // Traced and frozen run the same kernel on the same inputs: the images must be equal bit
    // for bit (memcmp, so that a NaN would count as a difference too).
    auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    const bool frozen_same = same_bits(tr, fr) && same_bits(tg, fg) && same_bits(tb, fb) &&
                             rng.state.to_vector() == traced_rng.state.to_vector();
    // Where a path went elsewhere it may also have drawn another number of times.
    const std::vector<uint64_t> states = traced_rng.state.to_vector();
    size_t same_states = 0;
    for (size_t i = 0; i < n; ++i)
      same_states += states[i] == ref_state[i];

    // The OpenMP tracer draws the same numbers, but std::sin/std::cos round differently from
    // freezeframe's, so a few paths go elsewhere; compare pixel by pixel and on average.
    size_t close = 0;
    double sum_ff = 0, sum_ref = 0, finite = 1;
    for (size_t i = 0; i < n; ++i) {
      const float a[3] = {fr[i], fg[i], fb[i]}, b[3] = {ref_r[i], ref_g[i], ref_b[i]};
      bool near = true;
      for (int c = 0; c < 3; ++c) {
        near = near && std::abs(a[c] - b[c]) <= 1e-3f * (1.f + std::abs(b[c]));
        sum_ff += a[c];
        sum_ref += b[c];
        finite = std::isfinite(a[c]) ? finite : 0;
      }
      close += near;
    }
    const double mean_ff = sum_ff / (3.0 * n * frames), mean_ref = sum_ref / (3.0 * n * frames);
    const double mean_diff = std::abs(mean_ff - mean_ref) / std::max(mean_ref, 1e-30);
    const double close_frac = static_cast<double>(close) / static_cast<double>(n);

    const uint64_t kernels = s1.traced_kernels - s0.traced_kernels;
    const uint64_t reductions = s1.reductions - s0.reductions;

    std::printf("\nresult\n");
    std::printf("  mean radiance      %.5f (OpenMP %.5f, relative difference %.2e)\n", mean_ff,
                mean_ref, mean_diff);
    std::printf("  pixels as OpenMP   %.2f%% within 1e-3 relative\n", 100.0 * close_frac);
    std::printf("  generator states   %.2f%% as OpenMP's\n",
                100.0 * static_cast<double>(same_states) / static_cast<double>(n));
    std::printf("  frozen vs traced   %s\n", frozen_same ? "bitwise identical" : "DIFFERENT");
    std::printf("  kernels per traced frame  %.2f (%.2f reductions)\n",
                static_cast<double>(kernels) / frames, static_cast<double>(reductions) / frames);
    std::printf("\ntimings (ms per frame: the first, then the median of the other %d)\n",
                frames - 1);
    std::printf("  traced             %9.3f  %9.3f\n", traced_t.first_ms, traced_t.median_ms);
    std::printf("  frozen             %9.3f  %9.3f  (%zu recording, %zu replays)\n",
                frozen_t.first_ms, frozen_t.median_ms, frozen_frame.n_recordings(),
                frozen_frame.n_replays());
    std::printf("  OpenMP by hand     %9.3f  %9.3f  (%d threads)\n", omp_t.first_ms,
                omp_t.median_ms, omp_threads);
    // Speed ratios (a time divided by a time), above 1 where the second is faster.
    std::printf("  speed frozen vs OpenMP        %6.2fx  (OpenMP time / frozen time)\n",
                omp_t.median_ms / frozen_t.median_ms);
    std::printf("  speed frozen vs traced        %6.2fx  (traced time / frozen time)\n",
                traced_t.median_ms / frozen_t.median_ms);

    if (!out_file.empty()) {
      if (!write_ppm(out_file, fr, fg, fb, width, height, frames)) {
        std::fprintf(stderr, "ff_path_tracer: cannot write %s\n", out_file.c_str());
        return 1;
      }
      std::printf("\nwrote %s\n", out_file.c_str());
    }

    // The OpenMP check allows 1% of the pixels (at least one) to differ (see above): it
    // catches a wrong image, not rounding. One diverged path can be a bright outlier, so the
    // mean is printed, not checked.
    const bool ok = frozen_same && frozen_frame.n_recordings() == 1 && finite == 1 &&
                    n - close <= std::max<size_t>(1, n / 100);
    std::printf("\n%s\n", ok ? "check: OK (frozen image bitwise equal to traced; OpenMP image "
                               "equal within 1e-3 in at least 99% of the pixels)"
                             : "check: FAILED");
    rng = ff::PCG32();
    traced_rng = ff::PCG32();
    traced = Image();
    frozen = Image();
    ff::shutdown();
    return ok ? 0 : 1;
  } catch (const ff::Error& e) {
    std::fprintf(stderr, "ff_path_tracer: %s\n", e.what());
    return 1;
  }
}
