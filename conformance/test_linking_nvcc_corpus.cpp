// Nothing valid refused: the nvcc corpus (scenarios/CMakeLists.txt, device_data.cu: a large
// uninitialised __device__ array in CUDA's NOBITS `.nv.global`, initialised arrays,
// __constant__ and __managed__ data; -G; several architectures in one fatbin; LTO-IR in
// fatbins and host objects) passes cujit's binary checks, the device-reference scan, and
// links through nvJitLink to a cubin (no GPU needed), alone and next to the same data of
// another translation unit's kind. nvcc -dlink takes every one of these files.
#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>

#include "cujit/format.hpp"
#include "cujit/linker.hpp"
#include "code/device_references.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"
#include "support/printers.hpp"

namespace cujit {
namespace {

struct CorpusFile {
  std::string name;
  bool lto = false;
};

void PrintTo(const CorpusFile& file, std::ostream* out) { *out << file.name; }

class NvccCorpus : public ::testing::TestWithParam<CorpusFile> {};

TEST_P(NvccCorpus, PassesTheChecksAndLinks) {
  const CorpusFile& file = GetParam();
  std::optional<LinkableCode> read;
  try {
    read = LinkableCode::from_path(test::fixture_path(file.name));
  } catch (const Error& error) {
    FAIL() << file.name << " was refused: " << error.what();
  }
  const LinkableCode& code = *read;
  // The device-reference scan (NRT detection) reads the same sections.
  detail::DeviceReferences references;
  EXPECT_NO_THROW(references = detail::device_references(code.format(), code.bytes(), Arch::parse("sm_90")))
      << file.name;
  for (const std::string& symbol : references.symbols) {
    EXPECT_EQ(symbol.find("big_"), std::string::npos) << file.name << ": its own array read as undefined";
  }
  Linker linker(test::link_options(LinkerBackend::nvjitlink, file.lto));
  linker.add(code);
  try {
    const LinkResult result = linker.link();
    EXPECT_FALSE(result.code.bytes().empty()) << file.name;
    // The linked cubin passes the same checks (it holds .nv.global too).
    EXPECT_NO_THROW((void)LinkableCode::cubin(result.code.bytes(), "relinked.cubin")) << file.name;
  } catch (const Error& error) {
    ADD_FAILURE() << file.name << " did not link: " << error.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Files, NvccCorpus,
    ::testing::Values(CorpusFile{"device_data.cubin"}, CorpusFile{"device_data_sass.fatbin"},
                      CorpusFile{"device_data_ptx.fatbin"}, CorpusFile{"device_data.o"},
                      CorpusFile{"device_data.a"}, CorpusFile{"device_data.ptx"},
                      CorpusFile{"device_data_debug.cubin"}, CorpusFile{"device_data_debug.o"},
                      CorpusFile{"device_data_multi.fatbin"}, CorpusFile{"device_data_whole.cubin"},
                      CorpusFile{"device_data.ltoir", true}, CorpusFile{"device_data_ltoir.fatbin", true},
                      CorpusFile{"device_data_ltoir.o", true}),
    [](const ::testing::TestParamInfo<CorpusFile>& param) { return test_identifier(param.param.name); });

}  // namespace
}  // namespace cujit
