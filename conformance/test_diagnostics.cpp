// live_handles(): what cujit holds right now, back to where it was after work and after
// failures (GPU handles are checked in test_reliability.cpp).
#include <gtest/gtest.h>

#include "cujit/diagnostics.hpp"
#include "cujit/linker.hpp"
#include "cujit/program.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

namespace cujit {
namespace {

TEST(LiveHandles, CompilesAndLinksReleaseTheirHandles) {
  const LiveHandles before = live_handles();
  CompileOptions options;
  options.arch = Arch::parse("sm_90");
  (void)Program("extern \"C\" __global__ void k() {}", "k.cu").compile(options);
  CUJIT_EXPECT_ERROR((void)Program("broken(", "broken.cu").compile(options), ErrorKind::compile, error, (void)error;);
  Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
  linker.add_file(test::fixture_path("scale_kernel.ptx"));
  (void)linker.link();
  EXPECT_EQ(live_handles(), before);
}

}  // namespace
}  // namespace cujit
