// Errors on one axis: the kind follows from the type, messages name component and input,
// and context added on the way up keeps the type and every field.
#include <gtest/gtest.h>

#include "cujit/error.hpp"

namespace cujit {
namespace {

TEST(Error, WhatNamesKindComponentMessageAndLog) {
  const Error error(ErrorKind::compile, "NVRTC (nvrtcCompileProgram)", "compiling 'k.cu' failed", "k.cu(1): error");
  const std::string what = error.what();
  EXPECT_EQ(what.rfind("cujit compile error in NVRTC (nvrtcCompileProgram): compiling 'k.cu' failed", 0), 0u) << what;
  EXPECT_NE(what.find("--- log ---\nk.cu(1): error\n--- end of log ---"), std::string::npos) << what;
}

TEST(Error, TheKindFollowsFromTheType) {
  EXPECT_EQ(LinkError("nvJitLink", "m", "", {}, {}).kind(), ErrorKind::link);
  EXPECT_EQ(CudaError("cuLaunchKernel", 1, "m").kind(), ErrorKind::cuda);
}

TEST(Error, ContextKeepsALinkErrorsSymbols) {
  const LinkError original("nvJitLink (nvJitLinkComplete)", "linking 'a.ptx' failed", "the log", {"missing_fn"},
                           {"twice_fn"});
  try {
    original.rethrow_with_context("KernelBuilder", "kernel 'k': ");
    FAIL() << "did not throw";
  } catch (const LinkError& error) {
    EXPECT_EQ(error.unresolved_symbols(), std::vector<std::string>{"missing_fn"});
    EXPECT_EQ(error.duplicate_symbols(), std::vector<std::string>{"twice_fn"});
    EXPECT_EQ(error.component(), "KernelBuilder (nvJitLink (nvJitLinkComplete))");
    EXPECT_EQ(error.message(), "kernel 'k': linking 'a.ptx' failed");
    EXPECT_EQ(error.log(), "the log");
    EXPECT_NE(std::string(error.what()).find("kernel 'k': linking 'a.ptx' failed"), std::string::npos);
  }
}

TEST(Error, ContextKeepsACudaErrorsResult) {
  try {
    CudaError("cuLaunchKernel", 700, "launching 'k' failed").rethrow_with_context("Graph", "node 3: ");
    FAIL() << "did not throw";
  } catch (const CudaError& error) {
    EXPECT_EQ(error.result(), 700);
    EXPECT_EQ(error.kind(), ErrorKind::cuda);
  }
}

TEST(Error, EveryKindHasAName) {
  for (ErrorKind kind : {ErrorKind::compile, ErrorKind::link, ErrorKind::format, ErrorKind::unsupported,
                         ErrorKind::cuda, ErrorKind::nrt, ErrorKind::cache, ErrorKind::usage, ErrorKind::io}) {
    EXPECT_NE(to_string(kind), "unknown");
  }
}

}  // namespace
}  // namespace cujit
