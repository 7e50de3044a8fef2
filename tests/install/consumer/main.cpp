// Uses the installed freezeframe: one fused kernel, a reduction, and a check on the host.
#include <freezeframe/freezeframe.h>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  try {
    std::vector<float> host(1000);
    for (size_t i = 0; i < host.size(); ++i) {
      host[i] = static_cast<float>(i);
    }
    ff::Float x = ff::Float::from(host);
    ff::Float y = ff::fma(x, 2.f, 1.f);  // 2x + 1
    ff::eval(y);
    std::vector<float> out = y.to_vector();
    float total = ff::sum(y).to_vector().at(0);

    int errors = 0;
    for (size_t i = 0; i < host.size(); ++i) {
      if (out.at(i) != 2.f * host[i] + 1.f) {
        ++errors;
      }
    }
    const float expect = 1000.f * 1000.f;  // sum of 2i + 1 for i < 1000
    if (std::abs(total - expect) > 1e-3f * expect) {
      ++errors;
    }
    std::printf("consumer: backend %s, sum %.1f (expected %.1f), %d errors\n",
                ff::backend_name().c_str(), total, expect, errors);
    ff::shutdown();
    return errors == 0 ? 0 : 1;
  } catch (const ff::Error& e) {
    std::fprintf(stderr, "consumer: ff::Error: %s\n", e.what());
    return 1;
  }
}
