// cujit in the "exec to first result" family: the public API as a user writes it
// (KernelBuilder from CUDA C++ source, build(), launch), with the disk build cache warm
// (CUJIT_CACHE_DIR, filled by the driver's setup run).
//
// Usage: first_result_cujit SOURCE.cu [--expect-disk-hit] [--write-cubin PATH]
//   --expect-disk-hit  the build must come from the disk cache (no compile, no link);
//                      otherwise the run is not what its name says and reports ok=false
//   --write-cubin PATH after the timed part, write the cubin of this build to PATH (the
//                      raw driver program's input: byte for byte what cujit loads)
// Prints one JSON line (first_result.hpp); exit 0 when the result was checked correct.

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cujit/arch.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/device.hpp"
#include "cujit/kernel_builder.hpp"
#include "cujit/linkable_code.hpp"
#include "cujit/module.hpp"
#include "first_result.hpp"

namespace fr = cujit::first_result;

namespace {

struct Arguments {
  std::string source;
  bool expect_disk_hit = false;
  std::string write_cubin;
  std::string error;  // non-empty: the command line was wrong
};

Arguments parse(int argc, char** argv) {
  Arguments out;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--expect-disk-hit") {
      out.expect_disk_hit = true;
    } else if (arg == "--write-cubin" && i + 1 < argc) {
      out.write_cubin = argv[++i];
    } else if (out.source.empty() && !arg.empty() && arg[0] != '-') {
      out.source = arg;
    } else {
      out.error = "unexpected argument '" + arg + "'";
    }
  }
  if (out.source.empty() && out.error.empty()) out.error = "no SOURCE.cu given";
  if (!out.error.empty()) {
    out.error += "; usage: first_result_cujit SOURCE.cu [--expect-disk-hit] [--write-cubin PATH]";
  }
  return out;
}

// Temp file, then rename: a reader never sees half a cubin.
std::string write_file(const std::string& path, const std::string& bytes) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) return "cannot write " + temp;
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    return "cannot rename " + temp + " to " + path;
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  const auto t0 = fr::Clock::now();
  fr::Result result;
  result.program = "cujit";
  const Arguments args = parse(argc, argv);
  if (!args.error.empty()) {
    result.error = args.error;
    fr::print(result);
    return 2;
  }
  auto t_context = t0;
  bool have_context = false;
  auto t_done = t0;
  try {
    cujit::use_device(0);
    t_context = fr::Clock::now();
    have_context = true;

    cujit::KernelOptions options;
    options.link.arch = cujit::Arch::of_device(0);
    cujit::KernelBuilder builder(fr::kernel_name, options);
    builder.source(cujit::LinkableCode::from_path(args.source));
    const cujit::BuiltKernel built = builder.build();
    const std::vector<float> x = fr::inputs_x();
    std::vector<float> y = fr::inputs_y();
    const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(fr::n);
    cujit::DeviceBuffer device_x(bytes);
    cujit::DeviceBuffer device_y(bytes);
    device_x.copy_from_host(x.data(), bytes);
    device_y.copy_from_host(y.data(), bytes);
    cujit::LaunchConfig config;
    config.grid.x = fr::grid;
    config.block.x = fr::block;
    built.kernel(config, fr::a, device_x.ptr(), device_y.ptr(), fr::n);
    device_y.copy_to_host(y.data(), bytes);  // synchronous: waits for the kernel
    result.error = fr::check(y);
    result.ok = result.error.empty();
    t_done = fr::Clock::now();

    const cujit::CacheStats stats = cujit::BuildCache::global().stats();
    if (result.ok && args.expect_disk_hit && (stats.builds != 0 || stats.disk_hits == 0)) {
      result.ok = false;
      result.error = "cujit's disk cache was not warm (" + std::to_string(stats.builds) + " builds, " +
                     std::to_string(stats.disk_hits) + " disk hits; CUJIT_CACHE_DIR and CUJIT_CACHE must name "
                     "the cache the setup run filled)";
    }
    if (result.ok && !args.write_cubin.empty()) {
      // A memory hit of the build above: the very bytes cujit loaded.
      const cujit::LinkedKernel linked = builder.link_cubin();
      if (std::string error = write_file(args.write_cubin, linked.link.code.bytes()); !error.empty()) {
        result.ok = false;
        result.error = error;
      }
    }
  } catch (const std::exception& error) {
    t_done = fr::Clock::now();
    result.ok = false;
    result.error = error.what();
  }
  result.context_s = fr::seconds_between(t0, have_context ? t_context : t_done);
  result.build_launch_s = have_context ? fr::seconds_between(t_context, t_done) : 0.0;
  fr::print(result);
  return result.ok ? 0 : 1;
}
