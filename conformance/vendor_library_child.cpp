// Run by the vendor library loading tests (test_vendor_libraries.cpp) as a new process, so
// that what it maps is its own doing: libcujit loads NVRTC and nvJitLink on first use, and a
// cache hit never does.
//
//   vendor_library_child compile CACHE_DIR|off   compile_cached of a tiny kernel to PTX
//   vendor_library_child kernel  CACHE_DIR|off   KernelBuilder::link_cubin of a tiny kernel
//   vendor_library_child identity                the identities and versions of both
//
// Prints key=value lines: source= (built, disk...), nvrtc-identity=, nvrtc-version=,
// nvjitlink-identity=, nvjitlink-version=, then always nvrtc= and nvjitlink= (the library
// files in /proc/self/maps, space-separated, or "none"). A cujit Error is printed as
// error-kind=, error-component=, error= and exits 3: the process survives it.
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cujit/compile_cache.hpp"
#include "cujit/error.hpp"
#include "cujit/kernel_builder.hpp"
#include "cujit/linker.hpp"
#include "cujit/program.hpp"

namespace {

const char* kernel_source = "extern \"C\" __global__ void k(int* p) { *p = 7; }\n";

cujit::CacheConfig cache_at(const std::string& directory) {
  cujit::CacheConfig config;
  config.mode = directory == "off" ? cujit::CacheMode::off : cujit::CacheMode::disk;
  config.directory = directory;
  return config;
}

// The mapped files whose names start with `prefix` (NVRTC's own library is "libnvrtc.",
// not its builtins beside it, libnvrtc-builtins).
std::string mapped(const std::string& prefix) {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> files;
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string name = path.substr(path.rfind('/') + 1);
    if (name.rfind(prefix, 0) == 0) files.insert(path);
  }
  std::string out;
  for (const std::string& file : files) out += (out.empty() ? "" : " ") + file;
  return out.empty() ? "none" : out;
}

int run(const std::vector<std::string>& args) {
  if (args.size() == 2 && args[0] == "compile") {
    cujit::BuildCache cache(cache_at(args[1]));
    cujit::CompileOptions options;
    options.arch = cujit::Arch::parse("sm_90");
    const cujit::CachedCompile compiled =
        cujit::compile_cached(cujit::Program(kernel_source, "k.cu"), options, cache);
    std::printf("source=%s\n", std::string(cujit::to_string(compiled.source)).c_str());
    return 0;
  }
  if (args.size() == 2 && args[0] == "kernel") {
    cujit::BuildCache cache(cache_at(args[1]));
    cujit::KernelOptions options;
    options.link.arch = cujit::Arch::parse("sm_90");
    cujit::KernelBuilder builder("k", options, cache);
    builder.source(cujit::LinkableCode::cuda_source(kernel_source, "k.cu"));
    const cujit::LinkedKernel linked = builder.link_cubin();
    std::printf("source=%s\n", std::string(cujit::to_string(linked.source)).c_str());
    return 0;
  }
  if (args.size() == 1 && args[0] == "identity") {
    std::printf("nvrtc-identity=%s\n", cujit::nvrtc_identity().c_str());
    std::printf("nvrtc-version=%s\n", cujit::nvrtc_version().c_str());
    std::printf("nvjitlink-identity=%s\n", cujit::nvjitlink_identity().c_str());
    std::printf("nvjitlink-version=%s\n", cujit::nvjitlink_version().c_str());
    return 0;
  }
  std::fprintf(stderr, "usage: see the comment at the top of vendor_library_child.cpp\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int status = 0;
  try {
    status = run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const cujit::Error& error) {
    std::printf("error-kind=%s\nerror-component=%s\nerror=%s\n",
                std::string(cujit::to_string(error.kind())).c_str(), error.component().c_str(),
                error.message().c_str());
    status = 3;
  }
  std::printf("nvrtc=%s\n", mapped("libnvrtc.").c_str());
  std::printf("nvjitlink=%s\n", mapped("libnvJitLink.").c_str());
  return status;
}
