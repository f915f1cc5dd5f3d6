// The CUDA C++ inputs of one link compile side by side (Linker::add_all, and a
// KernelBuilder's external sources): the same cubin as one after the other, the first
// failing input in order named, and the work really concurrent (shown by a rendezvous that
// only concurrent work reaches, not by timing).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "cujit/kernel_builder.hpp"
#include "cujit/linker.hpp"
#include "support/concurrently.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

LinkOptions sm90() {
  LinkOptions options;
  options.arch = Arch::parse("sm_90");
  return options;
}

std::vector<LinkableCode> sources() {
  return {LinkableCode::from_path(test::scenario_path("fixtures/mixed_kernel.cu")),
          LinkableCode::from_path(test::scenario_path("fixtures/dev_add.cu")),
          LinkableCode::from_path(test::scenario_path("fixtures/dev_mul.cu"))};
}

TEST(ConcurrentCompile, AddAllLinksWhatAddingOneByOneLinks) {
  Linker one_by_one(sm90(), BuildCache::disabled());
  for (const LinkableCode& code : sources()) one_by_one.add(code);
  Linker all(sm90(), BuildCache::disabled());
  all.add_all(sources());
  ASSERT_EQ(all.inputs().size(), one_by_one.inputs().size());
  for (std::size_t i = 0; i < all.inputs().size(); ++i) {
    EXPECT_EQ(all.inputs()[i].name(), one_by_one.inputs()[i].name());
    EXPECT_EQ(all.inputs()[i].bytes(), one_by_one.inputs()[i].bytes());
  }
  EXPECT_EQ(all.link().code.bytes(), one_by_one.link().code.bytes());
}

TEST(ConcurrentCompile, TheFirstFailingInputInOrderIsTheError) {
  std::vector<LinkableCode> codes = sources();
  codes.insert(codes.begin() + 1, LinkableCode::cuda_source("this is not C++ (first)\n", "first_bad.cu"));
  codes.push_back(LinkableCode::cuda_source("this is not C++ (second)\n", "second_bad.cu"));
  Linker linker(sm90(), BuildCache::disabled());
  CUJIT_EXPECT_ERROR(linker.add_all(codes), ErrorKind::compile, error,
                     EXPECT_NE(std::string(error.what()).find("first_bad.cu"), std::string::npos) << error.what(););
  EXPECT_TRUE(linker.inputs().empty()) << "nothing is added when a compile fails";
}

TEST(ConcurrentCompile, AKernelBuildersExternalSourcesLinkAsBefore) {
  KernelOptions options;
  options.link = sm90();
  KernelBuilder builder("mixed_kernel", options, BuildCache::disabled());
  std::vector<LinkableCode> codes = sources();
  builder.source(codes[0]);
  builder.link(codes[1]).link(codes[2]);
  Linker reference(sm90(), BuildCache::disabled());
  for (const LinkableCode& code : codes) reference.add(code);
  EXPECT_EQ(builder.link_cubin().link.code.bytes(), reference.link().code.bytes());
}

// Every work item waits until `expected` items have started: only work that runs side by
// side gets past it. The wait is bounded so that a sequential run fails instead of hanging.
TEST(RunConcurrently, ItemsRunSideBySide) {
  const std::size_t expected = std::min<std::size_t>(2, std::max(1u, std::thread::hardware_concurrency()));
  std::mutex mutex;
  std::condition_variable arrived;
  std::size_t started = 0;
  bool all_met = true;
  detail::run_concurrently(expected, [&](std::size_t) {
    std::unique_lock<std::mutex> lock(mutex);
    ++started;
    arrived.notify_all();
    if (!arrived.wait_for(lock, std::chrono::seconds(20), [&] { return started == expected; })) all_met = false;
  });
  EXPECT_TRUE(all_met) << "the items did not run at the same time";
}

TEST(RunConcurrently, EveryItemRunsOnceAndTheLowestFailureIsRethrown) {
  std::vector<int> runs(9, 0);
  try {
    detail::run_concurrently(runs.size(), [&](std::size_t i) {
      ++runs[i];
      if (i == 3 || i == 7) throw std::runtime_error("item " + std::to_string(i));
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "item 3");
  }
  for (int count : runs) EXPECT_EQ(count, 1);
}

}  // namespace
}  // namespace cujit
