// The attribution rules of GPU-time benchmarks (support/gpu_span.hpp), on made-up records:
// only a window's own records count, and a window that did not get exactly what its calls
// issue is an error, never a number.
#include "support/gpu_span.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace cujit::bench {
namespace {

IssuedCall launch(std::uint32_t id, std::size_t window = 0) {
  return {.correlation_id = id, .group = id, .kind = CallKind::kernel_launch, .function = "cuLaunchKernel",
          .window = window};
}
IssuedCall graph(std::uint32_t id, std::size_t window = 0) {
  return {.correlation_id = id, .group = id, .kind = CallKind::graph_launch, .function = "cuGraphLaunch",
          .window = window};
}
IssuedCall copy(std::uint32_t id, std::size_t window = 0) {
  return {.correlation_id = id, .group = id, .kind = CallKind::copy, .function = "cuMemcpyDtoDAsync_v2",
          .window = window};
}
ActivityRecord kernel(std::uint32_t id, std::uint64_t start, std::uint64_t end) {
  return {.correlation_id = id, .kind = RecordKind::kernel, .start = start, .end = end};
}
ActivityRecord memcpy_record(std::uint32_t id, std::uint64_t start, std::uint64_t end) {
  return {.correlation_id = id, .kind = RecordKind::copy, .start = start, .end = end};
}

const std::vector<WindowExpectation> one_window{{}};

TEST(GpuSpan, SpanCoversOnlyTheWindowsRecords) {
  // Warm-up (ids 1, 2) long before, another stream's kernel (id 50) long after.
  const std::vector<ActivityRecord> records{kernel(1, 100, 200), kernel(2, 300, 400), kernel(10, 10'000, 10'010),
                                            kernel(11, 10'020, 10'025), kernel(50, 90'000, 91'000)};
  const Attribution result = attribute_records(records, {launch(10), launch(11)}, one_window);
  ASSERT_EQ(result.windows.size(), 1u);
  const WindowResult& window = result.windows[0];
  EXPECT_TRUE(window.ok()) << window.error;
  EXPECT_EQ(window.times.kernels, 2u);
  EXPECT_DOUBLE_EQ(window.times.span_ns, 25.0);
  EXPECT_DOUBLE_EQ(window.times.kernel_ns, 15.0);
  EXPECT_DOUBLE_EQ(window.times.busy_ns(), 15.0);
  EXPECT_EQ(result.uncorrelated, 3u);
}

TEST(GpuSpan, RecordsGoToTheIterationThatIssuedThem) {
  // Two iterations delivered by one flush, out of order.
  const std::vector<ActivityRecord> records{kernel(21, 2'000, 2'100), kernel(11, 1'000, 1'040),
                                            kernel(20, 1'900, 1'950), kernel(10, 900, 920)};
  const std::vector<IssuedCall> calls{launch(10, 0), launch(11, 0), launch(20, 1), launch(21, 1)};
  const Attribution result = attribute_records(records, calls, {{.kernels = 2}, {.kernels = 2}});
  ASSERT_EQ(result.windows.size(), 2u);
  EXPECT_TRUE(result.windows[0].ok()) << result.windows[0].error;
  EXPECT_TRUE(result.windows[1].ok()) << result.windows[1].error;
  EXPECT_DOUBLE_EQ(result.windows[0].times.span_ns, 140.0);
  EXPECT_DOUBLE_EQ(result.windows[1].times.span_ns, 200.0);
  EXPECT_EQ(result.uncorrelated, 0u);
}

TEST(GpuSpan, MissingKernelRecordIsAnError) {
  const Attribution result = attribute_records({kernel(10, 100, 110)}, {launch(10), launch(11)}, one_window);
  EXPECT_FALSE(result.windows[0].ok());
  EXPECT_NE(result.windows[0].error.find("correlation id 11"), std::string::npos) << result.windows[0].error;
  EXPECT_NE(result.windows[0].error.find("expected exactly 1 kernel record"), std::string::npos);
}

TEST(GpuSpan, SecondRecordForOneLaunchIsAnError) {
  const Attribution result =
      attribute_records({kernel(10, 100, 110), kernel(10, 120, 130)}, {launch(10)}, one_window);
  EXPECT_FALSE(result.windows[0].ok());
  EXPECT_NE(result.windows[0].error.find("2 kernel"), std::string::npos) << result.windows[0].error;
}

TEST(GpuSpan, KernelCountMustMatchTheExpectation) {
  // A graph of 3 kernels that delivered 2 records: every call has records, the count is short.
  const std::vector<ActivityRecord> records{kernel(7, 100, 110), kernel(7, 120, 130)};
  const Attribution short_count = attribute_records(records, {graph(7)}, {{.kernels = 3}});
  EXPECT_FALSE(short_count.windows[0].ok());
  EXPECT_NE(short_count.windows[0].error.find("expected 3 kernel records in the window, got 2"), std::string::npos)
      << short_count.windows[0].error;

  const Attribution exact = attribute_records(records, {graph(7)}, {{.kernels = 2}});
  EXPECT_TRUE(exact.windows[0].ok()) << exact.windows[0].error;
  EXPECT_DOUBLE_EQ(exact.windows[0].times.span_ns, 30.0);
}

TEST(GpuSpan, GraphLaunchWithoutRecordsIsAnError) {
  const Attribution result = attribute_records({kernel(3, 1, 2)}, {graph(7)}, one_window);
  EXPECT_FALSE(result.windows[0].ok());
  EXPECT_NE(result.windows[0].error.find("cuGraphLaunch"), std::string::npos) << result.windows[0].error;
}

TEST(GpuSpan, CopiesAddToBusyTimeAndSpan) {
  const std::vector<ActivityRecord> records{memcpy_record(5, 100, 150), kernel(6, 160, 170),
                                            memcpy_record(7, 180, 200)};
  const Attribution result = attribute_records(records, {copy(5), launch(6), copy(7)}, one_window);
  const WindowResult& window = result.windows[0];
  ASSERT_TRUE(window.ok()) << window.error;
  EXPECT_EQ(window.times.copies, 2u);
  EXPECT_DOUBLE_EQ(window.times.copy_ns, 70.0);
  EXPECT_DOUBLE_EQ(window.times.busy_ns(), 80.0);
  EXPECT_DOUBLE_EQ(window.times.span_ns, 100.0);
}

TEST(GpuSpan, KernelRecordForACopyIsAnError) {
  const Attribution result = attribute_records({kernel(5, 100, 150)}, {copy(5)}, one_window);
  EXPECT_FALSE(result.windows[0].ok());
}

TEST(GpuSpan, NestedCallsShareOneRecord) {
  // cudaLaunchKernel (id 30) made cuLaunchKernel (id 31) inside it; the kernel record may
  // carry either id, and the pair must produce one kernel, not two.
  const IssuedCall outer{.correlation_id = 30, .group = 30, .kind = CallKind::kernel_launch,
                         .function = "cudaLaunchKernel_v7000"};
  const IssuedCall inner{.correlation_id = 31, .group = 30, .kind = CallKind::kernel_launch,
                         .function = "cuLaunchKernel"};
  for (std::uint32_t id : {30u, 31u}) {
    const Attribution result = attribute_records({kernel(id, 100, 140)}, {inner, outer}, {{.kernels = 1}});
    EXPECT_TRUE(result.windows[0].ok()) << "record id " << id << ": " << result.windows[0].error;
    EXPECT_EQ(result.windows[0].times.kernels, 1u);
  }
  const Attribution doubled =
      attribute_records({kernel(30, 100, 140), kernel(31, 150, 160)}, {inner, outer}, one_window);
  EXPECT_FALSE(doubled.windows[0].ok());
}

TEST(GpuSpan, RecordWithoutTimestampsIsAnError) {
  const Attribution zero = attribute_records({kernel(10, 0, 0)}, {launch(10)}, one_window);
  EXPECT_FALSE(zero.windows[0].ok());
  EXPECT_NE(zero.windows[0].error.find("timestamps"), std::string::npos) << zero.windows[0].error;
  const Attribution backwards = attribute_records({kernel(10, 500, 400)}, {launch(10)}, one_window);
  EXPECT_FALSE(backwards.windows[0].ok());
}

TEST(GpuSpan, FailedCallIsAnError) {
  IssuedCall failed = launch(10);
  failed.status = 1;
  const Attribution result = attribute_records({}, {failed}, one_window);
  EXPECT_FALSE(result.windows[0].ok());
  EXPECT_NE(result.windows[0].error.find("failed inside the window with status 1"), std::string::npos)
      << result.windows[0].error;
}

TEST(GpuSpan, WindowWithoutCallsIsAnError) {
  // Records arrived, but no callback noted a call: nothing can be attributed, so no figure.
  const Attribution result = attribute_records({kernel(10, 100, 110)}, {}, one_window);
  EXPECT_FALSE(result.windows[0].ok());
  EXPECT_NE(result.windows[0].error.find("no launch or copy call"), std::string::npos) << result.windows[0].error;
  EXPECT_EQ(result.uncorrelated, 1u);
}

TEST(GpuSpan, AnErrorInOneWindowLeavesTheOthers) {
  const std::vector<IssuedCall> calls{launch(10, 0), launch(20, 1)};
  const Attribution result = attribute_records({kernel(10, 100, 110)}, calls, {{}, {}});
  EXPECT_TRUE(result.windows[0].ok()) << result.windows[0].error;
  EXPECT_FALSE(result.windows[1].ok());
}

TEST(GpuSpan, ClassifiesDriverAndRuntimeNames) {
  EXPECT_EQ(classify_api("cuLaunchKernel"), CallKind::kernel_launch);
  EXPECT_EQ(classify_api("cuLaunchKernelEx_ptsz"), CallKind::kernel_launch);
  EXPECT_EQ(classify_api("cudaLaunchKernel_v7000"), CallKind::kernel_launch);
  EXPECT_EQ(classify_api("cuLaunchCooperativeKernelMultiDevice"), CallKind::graph_launch);
  EXPECT_EQ(classify_api("cuGraphLaunch"), CallKind::graph_launch);
  EXPECT_EQ(classify_api("cudaGraphLaunch_v10000"), CallKind::graph_launch);
  EXPECT_EQ(classify_api("cuMemcpyDtoDAsync_v2"), CallKind::copy);
  EXPECT_EQ(classify_api("cudaMemsetAsync"), CallKind::copy);
  EXPECT_EQ(classify_api("cuMemsetD32Async"), CallKind::copy);
  EXPECT_EQ(classify_api("cuLaunchHostFunc"), std::nullopt);
  EXPECT_EQ(classify_api("cudaLaunchHostFunc_v10000"), std::nullopt);
  EXPECT_EQ(classify_api("cuStreamSynchronize"), std::nullopt);
  EXPECT_EQ(classify_api("cuMemAlloc_v2"), std::nullopt);
  EXPECT_EQ(classify_api(""), std::nullopt);
}

}  // namespace
}  // namespace cujit::bench
