// The linking matrix: format x backend x LTO x origin. Each cell links or fails with the
// documented error (docs/linking.md); on a GPU the linked kernel runs and is checked.
#include <gtest/gtest.h>

#include <optional>

#include "cujit/linker.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

namespace cujit {
namespace {

using test::FixtureInput;
using test::Origin;

struct Cell {
  FixtureInput input;
  LinkerBackend backend;
  bool lto;
  Origin origin;
};

void PrintTo(const Cell& cell, std::ostream* out) {
  *out << cell.input.file << " " << to_string(cell.backend) << (cell.lto ? " lto " : " ") << to_string(cell.origin);
}

// The documented outcome of a cell: nullopt when it links, else the error kind and a
// fragment of the message.
struct ExpectedError {
  ErrorKind kind;
  std::string fragment;
};

std::optional<ExpectedError> expected_error(const Cell& cell) {
  const bool ltoir_only = cell.input.file == "scale_kernel.ltoir" ||
                          cell.input.file == "scale_kernel_ltoir.fatbin";
  if (ltoir_only && cell.backend == LinkerBackend::driver) {
    return ExpectedError{ErrorKind::unsupported, "does not take"};
  }
  if (ltoir_only && !cell.lto) return ExpectedError{ErrorKind::unsupported, "lto = true"};
  return std::nullopt;
}

std::vector<Cell> all_cells() {
  const char* inputs[] = {"scale_kernel.ptx",         "src:scale_kernel.cu",
                          "scale_kernel.ltoir",       "scale_kernel.cubin",
                          "scale_kernel_sass.fatbin", "scale_kernel_ptx.fatbin",
                          "scale_kernel_ltoir.fatbin", "scale_kernel.o",
                          "scale_kernel.a"};
  std::vector<Cell> cells;
  for (const char* file : inputs) {
    for (LinkerBackend backend : {LinkerBackend::nvjitlink, LinkerBackend::driver}) {
      for (bool lto : {false, true}) {
        for (Origin origin : {Origin::path, Origin::bytes}) {
          cells.push_back(Cell{test::fixture_input(file), backend, lto, origin});
        }
      }
    }
  }
  return cells;
}

std::vector<Cell> cells_for(std::optional<LinkerBackend> only) {
  std::vector<Cell> out;
  for (const Cell& cell : all_cells()) {
    if (!only || cell.backend == *only) out.push_back(cell);
  }
  return out;
}

std::string cell_name(const ::testing::TestParamInfo<Cell>& info) {
  const Cell& c = info.param;
  std::string file = c.input.file.rfind("src:", 0) == 0 ? c.input.file.substr(4) : c.input.file;
  return test::identifier(file) + "__" + std::string(to_string(c.backend)) + "__lto_" +
         (c.lto ? "on" : "off") + "__" + std::string(test::to_string(c.origin));
}

// Links the cell; returns the result, or checks the documented error and returns nullopt.
std::optional<LinkResult> link_cell(const Cell& cell) {
  const auto expected = expected_error(cell);
  try {
    Linker linker(test::link_options(cell.backend, cell.lto));
    test::add_input(linker, cell.input, cell.origin);
    LinkResult result = linker.link();
    EXPECT_FALSE(expected.has_value())
        << "linked, but the documented outcome is a " << to_string(expected->kind) << " error";
    return result;
  } catch (const Error& error) {
    if (!expected) {
      ADD_FAILURE() << "documented to link, but: " << error.what();
      return std::nullopt;
    }
    EXPECT_EQ(error.kind(), expected->kind) << error.what();
    const std::string what = error.what();
    EXPECT_NE(what.find(expected->fragment), std::string::npos) << what;
    // The message names the input.
    const std::string file = test::input_path(cell.input).filename().string();
    EXPECT_NE(what.find(file), std::string::npos) << what;
    return std::nullopt;
  }
}

// CPU: nvJitLink links to a cubin without a GPU.
class LinkMatrix : public ::testing::TestWithParam<Cell> {};

TEST_P(LinkMatrix, LinksToCubinOrFailsAsDocumented) {
  const auto result = link_cell(GetParam());
  if (!result) return;  // the documented error was checked in link_cell
  EXPECT_EQ(detect_format(result->code.bytes()), Format::cubin);
  EXPECT_EQ(integrity_problem(Format::cubin, result->code.bytes()), "");
  EXPECT_NE(result->code.bytes().find("scale_kernel"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Cells, LinkMatrix,
                         ::testing::ValuesIn(cells_for(LinkerBackend::nvjitlink)), cell_name);

// GPU: both backends; the kernel runs and computes out[i] = 3 * x + i.
class GpuLinkMatrix : public ::testing::TestWithParam<Cell> {};

TEST_P(GpuLinkMatrix, LinksLoadsAndRuns) {
  CUJIT_REQUIRE_DEVICE();
  const auto result = link_cell(GetParam());
  if (!result) return;  // the documented error was checked in link_cell
  constexpr unsigned threads = 32;
  const int x = 7;
  const auto out = test::run_int_kernel(result->code.bytes(), "scale_kernel", threads, {x});
  for (unsigned i = 0; i < threads; ++i) {
    EXPECT_EQ(out[i], 3 * x + static_cast<int>(i)) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, GpuLinkMatrix, ::testing::ValuesIn(cells_for(std::nullopt)),
                         cell_name);

}  // namespace
}  // namespace cujit
