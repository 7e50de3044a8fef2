// ptxas from tests (see ptxas.h).
#include "cuda/ptxas.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/ptx_math.h"
#include "backend/cuda/ptx_writer.h"

namespace ffcuda {

std::string find_ptxas() {
  if (const char* env = std::getenv("FF_PTXAS"); env && *env && access(env, X_OK) == 0)
    return env;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':')) {
      std::string p = (dir.empty() ? "." : dir) + "/ptxas";
      if (access(p.c_str(), X_OK) == 0)
        return p;
    }
  }
  const char* usual = "/usr/local/cuda/bin/ptxas";  // the CUDA toolkit's default prefix
  if (access(usual, X_OK) == 0)
    return usual;
  return "";
}

PtxasResult run_ptxas(const std::string& ptxas, const std::string& ptx, unsigned sm) {
  char dir[] = "/tmp/ff_ptxas_XXXXXX";
  if (!mkdtemp(dir))
    return {-1, "mkdtemp failed"};
  std::string in = std::string(dir) + "/k.ptx", out = std::string(dir) + "/k.cubin";
  std::ofstream(in) << ptx;
  std::string cmd = "'" + ptxas + "' --gpu-name sm_" + std::to_string(sm) +
                    " --warning-as-error -o '" + out + "' '" + in + "' 2>&1";
  PtxasResult r;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
      r.output.append(buf, n);
    int status = pclose(p);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::remove(in.c_str());
  std::remove(out.c_str());
  rmdir(dir);
  return r;
}

std::string combine_modules(const std::vector<std::string>& modules, unsigned sm) {
  ff::cuda_backend::PtxTarget target;
  target.sm = sm;
  std::string out =
      ff::cuda_backend::ptx_module_header(target) + ff::cuda_backend::ptx_math_globals();
  for (size_t k = 0; k < modules.size(); ++k) {
    std::stringstream ss(modules[k]);
    std::string line;
    while (std::getline(ss, line)) {
      if (line.rfind(".version", 0) == 0 || line.rfind(".target", 0) == 0 ||
          line.rfind(".address_size", 0) == 0 || line.rfind(".global", 0) == 0)
        continue;
      // ".entry name(" -> ".entry name_<k>(" (entry names must be unique in one module)
      size_t e = line.find(".entry ");
      size_t paren = e == std::string::npos ? e : line.find('(', e);
      if (paren != std::string::npos)
        line.insert(paren, "_" + std::to_string(k));
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace ffcuda
