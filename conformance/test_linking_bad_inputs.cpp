// Bad inputs: every one is a typed error naming the input; nothing crashes or leaks.
// File-level cases run for both backends on CPU (they fail before any backend call);
// link-level cases run through nvJitLink on CPU and through the driver linker on a GPU.
#include <gtest/gtest.h>

#include "cujit/linker.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

namespace cujit {
namespace {

using test::fixture_path;
using test::read_bytes;

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

std::string backend_name(const ::testing::TestParamInfo<LinkerBackend>& info) {
  return std::string(to_string(info.param));
}

// ---- file-level: both backends, CPU --------------------------------------------------

class BadFile : public ::testing::TestWithParam<LinkerBackend> {
 protected:
  // add_file must throw `kind` with every fragment in its message.
  void expect_rejected(const std::filesystem::path& path, ErrorKind kind,
                       std::initializer_list<std::string> fragments) {
    Linker linker(test::link_options(GetParam(), false));
    CUJIT_EXPECT_ERROR(linker.add_file(path), kind, error,
                       EXPECT_TRUE(contains(error.what(), path.string())) << error.what();
                       for (const std::string& fragment : fragments) {
                         EXPECT_TRUE(contains(error.what(), fragment))
                             << "missing '" << fragment << "' in: " << error.what();
                       });
    EXPECT_TRUE(linker.inputs().empty());
  }
  test::TempDir dir;
};

TEST_P(BadFile, EmptyFile) {
  expect_rejected(dir.write("empty.ptx", ""), ErrorKind::format, {"is empty"});
}

TEST_P(BadFile, TruncatedFileOfEachBinaryFormat) {
  for (const char* name : {"scale_kernel.cubin", "scale_kernel_sass.fatbin",
                           "scale_kernel_ltoir.fatbin", "scale_kernel.o", "scale_kernel.a"}) {
    const std::string bytes = read_bytes(fixture_path(name));
    const auto cut = dir.write(std::string("cut_") + name, bytes.substr(0, bytes.size() / 2));
    expect_rejected(cut, ErrorKind::format, {"truncated"});
  }
  const auto tiny_ltoir = dir.write("tiny.ltoir", read_bytes(fixture_path("scale_kernel.ltoir")).substr(0, 5));
  expect_rejected(tiny_ltoir, ErrorKind::format, {"truncated"});
}

TEST_P(BadFile, WrongMagic) {
  std::string bytes = read_bytes(fixture_path("scale_kernel_sass.fatbin"));
  bytes[0] = 'X';
  bytes[1] = '\0';
  expect_rejected(dir.write("wrong_magic.fatbin", bytes), ErrorKind::format,
                  {"given as fatbin", "not a known format"});
}

TEST_P(BadFile, ExtensionAndContentDisagree) {
  expect_rejected(dir.write("holds_ptx.cubin", read_bytes(fixture_path("scale_kernel.ptx"))),
                  ErrorKind::format, {"given as cubin", "content is ptx"});
}

TEST_P(BadFile, NoExtension) {
  expect_rejected(dir.write("kernel", read_bytes(fixture_path("scale_kernel.ptx"))),
                  ErrorKind::format, {"has no extension", "'.ptx'"});
}

TEST_P(BadFile, UnknownExtension) {
  expect_rejected(dir.write("header.cuh", "__device__ int f();\n"), ErrorKind::format,
                  {"unknown extension '.cuh'"});
}

TEST_P(BadFile, MissingPath) {
  expect_rejected(dir.path() / "does_not_exist.ptx", ErrorKind::io, {"no such file"});
}

TEST_P(BadFile, Directory) {
  std::filesystem::create_directory(dir.path() / "a_directory.ptx");
  expect_rejected(dir.path() / "a_directory.ptx", ErrorKind::io, {"is a directory"});
}

TEST_P(BadFile, NvrtcCompileErrorCarriesTheLog) {
  const auto path = dir.write("broken.cu", "extern \"C\" __global__ void k() { nope(); }\n");
  Linker linker(test::link_options(GetParam(), false));
  CUJIT_EXPECT_ERROR(linker.add_file(path), ErrorKind::compile, error,
                     EXPECT_TRUE(contains(error.what(), "broken.cu")) << error.what();
                     EXPECT_TRUE(contains(error.log(), "nope")) << error.log(););
}

TEST_P(BadFile, LtoIrIntoTheDriverOrWithoutLto) {
  Linker linker(test::link_options(GetParam(), false));
  CUJIT_EXPECT_ERROR(linker.add_file(fixture_path("scale_kernel.ltoir")), ErrorKind::unsupported,
                     error, EXPECT_TRUE(contains(error.what(), "scale_kernel.ltoir"));
                     EXPECT_TRUE(contains(error.what(), GetParam() == LinkerBackend::driver
                                                            ? "driver linker"
                                                            : "lto = true"))
                     << error.what(););
}

INSTANTIATE_TEST_SUITE_P(Backends, BadFile,
                         ::testing::Values(LinkerBackend::nvjitlink, LinkerBackend::driver),
                         backend_name);

// ---- link-level: nvJitLink on CPU, the driver linker on a GPU -----------------------

// The LinkError a link that must fail throws; a failure (and an empty error) if it links.
LinkError link_error(const Linker& linker, const std::string& why_it_must_fail) {
  try {
    (void)linker.link();
  } catch (const LinkError& error) {
    return error;
  }
  ADD_FAILURE() << "linked " << why_it_must_fail;
  return LinkError("", "", "", {}, {});
}

class BadLink : public ::testing::TestWithParam<LinkerBackend> {
 protected:
  void SetUp() override {
    if (GetParam() == LinkerBackend::driver) CUJIT_REQUIRE_DEVICE();
  }
  Linker linker(const std::string& arch = "sm_90") const {
    return Linker(test::link_options(GetParam(), false, arch));
  }
};

TEST_P(BadLink, PtxSyntaxErrorCarriesTheLog) {
  Linker l = linker();
  l.add_data(Format::ptx,
             ".version 9.0\n.target sm_90\n.address_size 64\n"
             ".visible .entry broken()\n{\n  frobnicate.u32 %r1;\n  ret;\n}\n",
             "broken.ptx");
  CUJIT_EXPECT_ERROR(l.link(), ErrorKind::link, error,
                     EXPECT_TRUE(contains(error.what(), "broken.ptx")) << error.what();
                     EXPECT_FALSE(error.log().empty()) << error.what(););
}

TEST_P(BadLink, UnresolvedExternNamesTheSymbol) {
  Linker l = linker();
  l.add_file(fixture_path("mixed_kernel.ptx"));
  l.add_file(fixture_path("dev_add.ptx"));
  const LinkError error = link_error(l, "without a definition of dev_mul");
  EXPECT_TRUE(contains(error.what(), "dev_mul")) << error.what();
  EXPECT_TRUE(contains(error.what(), "mixed_kernel.ptx")) << error.what();
  EXPECT_EQ(error.unresolved_symbols(), std::vector<std::string>{"dev_mul"}) << error.what();
}

TEST_P(BadLink, SameSymbolDefinedInTwoInputs) {
  Linker l = linker();
  l.add_file(fixture_path("mixed_kernel.ptx"));
  l.add_file(fixture_path("dev_mul.ptx"));
  l.add_file(fixture_path("dev_add.ptx"));
  l.add_file(fixture_path("dev_add.cubin"));
  const LinkError error = link_error(l, "with dev_add defined twice");
  EXPECT_TRUE(contains(error.what(), "dev_add")) << error.what();
  EXPECT_TRUE(contains(error.what(), "dev_add.cubin")) << error.what();
}

TEST_P(BadLink, SameSymbolAfterAnLtoLinkInTheSameProcess) {
  // nvJitLink 13.0 crashes in its multiple-definition path once an LTO link has run in the
  // process; cujit finds the duplicate before the backend sees it.
  Linker lto(test::link_options(LinkerBackend::nvjitlink, true));
  lto.add_file(fixture_path("scale_kernel.ltoir"));
  (void)lto.link();
  Linker l = linker();
  l.add_file(fixture_path("dev_add.ptx"));
  l.add_file(fixture_path("dev_add.cubin"));
  const LinkError error = link_error(l, "with dev_add defined twice");
  EXPECT_EQ(error.duplicate_symbols(), std::vector<std::string>{"dev_add"}) << error.what();
  EXPECT_TRUE(contains(error.what(), "dev_add.ptx")) << error.what();
  EXPECT_TRUE(contains(error.what(), "dev_add.cubin")) << error.what();
}

TEST_P(BadLink, CubinForAnotherArchitecture) {
  Linker l = linker();
  // Refused when added: the ELF header says which SASS it holds.
  CUJIT_EXPECT_ERROR(l.add_file(fixture_path("scale_kernel_sm80.cubin")), ErrorKind::link, error,
                     EXPECT_TRUE(contains(error.what(), "scale_kernel_sm80.cubin"))
                         << error.what();
                     EXPECT_TRUE(contains(error.what(), "SASS for sm_80")) << error.what(););
}

TEST_P(BadLink, ArchSpecificPtxForThePlainArch) {
  Linker l = linker();
  // Refused when added, with nvJitLink's wording, by both backends alike.
  CUJIT_EXPECT_ERROR(
      l.add_file(fixture_path("scale_kernel_sm90a.ptx")), ErrorKind::link, error,
      EXPECT_TRUE(contains(error.what(), "scale_kernel_sm90a.ptx")) << error.what();
      EXPECT_TRUE(contains(error.what(), "PTX with .target 'sm_90a' cannot be compiled for "
                                         "architecture 'sm_90'"))
          << error.what(););
}

TEST_P(BadLink, ArchSpecificPtxLinksForItsArch) {
  Linker l = linker("sm_90a");
  l.add_file(fixture_path("scale_kernel_sm90a.ptx"));
  EXPECT_EQ(detect_format(l.link().code.bytes()), Format::cubin);
}

INSTANTIATE_TEST_SUITE_P(Cpu, BadLink, ::testing::Values(LinkerBackend::nvjitlink), backend_name);
INSTANTIATE_TEST_SUITE_P(Gpu, BadLink, ::testing::Values(LinkerBackend::driver), backend_name);

}  // namespace
}  // namespace cujit
