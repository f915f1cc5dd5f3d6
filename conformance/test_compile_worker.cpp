// NVRTC compiles in worker processes (core/src/compile/compile_worker.hpp): the same bytes,
// log, lowered names and errors as in-process; a worker that crashes, hangs, floods, answers
// nonsense or is missing is a typed error naming the input; no descriptor leaks; and
// Linker::add_all really uses workers for two or more sources (and not with the switch).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>
#include <thread>

#include "compile/compile_worker.hpp"
#include "cujit/compile_cache.hpp"
#include "cujit/vendor_time.hpp"
#include "support/cache_helpers.hpp"
#include "cujit/linker.hpp"
#include "cujit/program.hpp"
#include "support/fixtures.hpp"
#include "support/scoped_variable.hpp"

namespace cujit {
namespace {

const std::string worker = CUJIT_TEST_COMPILE_WORKER;
const std::string hostile = CUJIT_TEST_HOSTILE_COMPILE_WORKER;

const char* const templated_source = R"(
#include "scale.h"
template <typename T> __global__ void scale(T* p) { p[threadIdx.x] *= T(SCALE); }
template __global__ void scale<float>(float*);
extern "C" __device__ float twice(float x) { return 2.0f * x; }
)";

CompileOptions options_with_everything(CompileTarget target) {
  CompileOptions options;
  options.arch = Arch::parse("sm_90");
  options.target = target;
  options.headers = {Header{"scale.h", "#define SCALE 3\n"}};
  options.name_expressions = {"scale<float>"};
  options.options = {"-DUNUSED=1", "-std=c++17"};
  return options;
}

detail::WorkerLimits quick_limits() {
  detail::WorkerLimits limits;
  limits.timeout = std::chrono::seconds(2);
  limits.max_reply_bytes = std::size_t{1} << 20;
  return limits;
}

std::set<std::string> open_descriptors() {
  std::set<std::string> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  const std::string own = std::to_string(::dirfd(dir));
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.' && entry->d_name != own) fds.insert(entry->d_name);
  }
  ::closedir(dir);
  return fds;
}

using ::cujit::test::ScopedVariable;

TEST(CompileWorkerProtocol, ARequestDecodesToWhatWasEncoded) {
  const CompileOptions options = options_with_everything(CompileTarget::ltoir);
  const Program program(templated_source, "templated.cu");
  const auto decoded = detail::decode_compile_request(detail::encode_compile_request(program, options));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->first.source(), program.source());
  EXPECT_EQ(decoded->first.name(), program.name());
  EXPECT_EQ(decoded->second.arch, options.arch);
  EXPECT_EQ(decoded->second.target, options.target);
  EXPECT_EQ(decoded->second.relocatable, options.relocatable);
  EXPECT_EQ(nvrtc_options(decoded->second), nvrtc_options(options));
  ASSERT_EQ(decoded->second.headers.size(), 1u);
  EXPECT_EQ(decoded->second.headers[0].name, "scale.h");
  EXPECT_EQ(decoded->second.headers[0].content, "#define SCALE 3\n");
  EXPECT_EQ(decoded->second.name_expressions, options.name_expressions);
}

TEST(CompileWorkerProtocol, DamagedRequestsAreRefused) {
  const std::string good =
      detail::encode_compile_request(Program(templated_source, "t.cu"), options_with_everything(CompileTarget::ptx));
  EXPECT_FALSE(detail::decode_compile_request(""));
  EXPECT_FALSE(detail::decode_compile_request("not a record"));
  for (std::size_t cut : {std::size_t{1}, good.size() / 2, good.size() - 1}) {
    EXPECT_FALSE(detail::decode_compile_request(good.substr(0, cut))) << "cut at " << cut;
  }
}

// The compile target, printed by name in test listings and JUnit files.
struct TargetCase {
  CompileTarget target;
};

void PrintTo(const TargetCase& value, std::ostream* out) { *out << to_string(value.target); }

class CompileWorker : public ::testing::TestWithParam<TargetCase> {};

TEST_P(CompileWorker, GivesTheBytesLogAndLoweredNamesOfAnInProcessCompile) {
  const CompileOptions options = options_with_everything(GetParam().target);
  const Program program(templated_source, "templated.cu");
  const CompileResult here = program.compile(options);
  const CompileResult there = detail::compile_in_worker(program, options, {worker}, detail::WorkerLimits{});
  EXPECT_EQ(there.code.format(), here.code.format());
  EXPECT_EQ(there.code.name(), here.code.name());
  EXPECT_EQ(there.code.bytes(), here.code.bytes());
  EXPECT_EQ(there.code.lowered_names(), here.code.lowered_names());
  EXPECT_EQ(there.log, here.log);
  EXPECT_EQ(there.options, here.options);
}

INSTANTIATE_TEST_SUITE_P(Targets, CompileWorker,
                         ::testing::Values(TargetCase{CompileTarget::ptx}, TargetCase{CompileTarget::ltoir},
                                           TargetCase{CompileTarget::cubin}),
                         [](const auto& param_info) { return std::string(to_string(param_info.param.target)); });

TEST(CompileWorkerErrors, ACompileErrorIsTheSameErrorAsInProcess) {
  const Program program("__global__ void broken( { }\n", "broken.cu");
  const CompileOptions options = options_with_everything(CompileTarget::ptx);
  std::optional<Error> here, there;
  try {
    program.compile(options);
  } catch (const Error& error) {
    here = error;
  }
  try {
    detail::compile_in_worker(program, options, {worker}, detail::WorkerLimits{});
  } catch (const Error& error) {
    there = error;
  }
  ASSERT_TRUE(here && there);
  EXPECT_EQ(there->kind(), ErrorKind::compile);
  EXPECT_EQ(there->kind(), here->kind());
  EXPECT_EQ(there->component(), here->component());
  EXPECT_EQ(there->message(), here->message());
  EXPECT_EQ(there->log(), here->log());
  EXPECT_NE(there->log().find("broken.cu"), std::string::npos) << there->log();
}

struct HostileCase {
  const char* mode;
  const char* expected;  // in the error's message or log
};

void PrintTo(const HostileCase& value, std::ostream* out) { *out << value.mode; }

class CompileWorkerHostile : public ::testing::TestWithParam<HostileCase> {};

TEST_P(CompileWorkerHostile, IsATypedErrorNamingTheInput) {
  const Program program(templated_source, "victim.cu");
  CUJIT_EXPECT_ERROR(
      detail::compile_in_worker(program, options_with_everything(CompileTarget::ptx), {hostile, GetParam().mode},
                                quick_limits()),
      ErrorKind::compile, error,
      const std::string what = error.what();
      EXPECT_NE(what.find("victim.cu"), std::string::npos) << what;
      EXPECT_NE(what.find(hostile), std::string::npos) << what;
      EXPECT_NE(what.find(GetParam().expected), std::string::npos) << what;);
}

INSTANTIATE_TEST_SUITE_P(Modes, CompileWorkerHostile,
                         ::testing::Values(HostileCase{"crash", "crashed: signal"},
                                           HostileCase{"hang", "timed out after 2000 ms"},
                                           HostileCase{"flood", "over 1048576 bytes"},
                                           HostileCase{"garbage", "is not a compile result"},
                                           HostileCase{"fail", "refusing to compile"}),
                         [](const auto& param_info) { return std::string(param_info.param.mode); });

TEST(CompileWorkerHostile, AMissingWorkerIsATypedError) {
  const Program program(templated_source, "victim.cu");
  CUJIT_EXPECT_ERROR(detail::compile_in_worker(program, options_with_everything(CompileTarget::ptx),
                                               {"/nonexistent/cujit-compile-worker"}, quick_limits()),
                     ErrorKind::compile, error,
                     EXPECT_NE(std::string(error.what()).find("could not start"), std::string::npos) << error.what(););
}

// The worker holds stdin, stdout and stderr and whatever this process holds without
// close-on-exec (inherited from whoever started the test), nothing cujit opened; and after
// runs of every kind, this process holds what it held before.
TEST(CompileWorkerHostile, NoDescriptorLeaksIntoTheWorkerOrOutOfARun) {
  // NVRTC and nvJitLink are loaded from the descriptor that was checked, held (close-on-exec)
  // as long as the library stays mapped, for good (support/vendor_library.hpp): loaded
  // first, so that a first load during the runs below is not counted as a leak.
  (void)nvrtc_version();
  (void)nvjitlink_version();
  std::set<std::string> inheritable{"0", "1", "2"};
  for (const std::string& fd : open_descriptors()) {
    const int flags = ::fcntl(std::stoi(fd), F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) == 0) inheritable.insert(fd);
  }
  const std::set<std::string> before = open_descriptors();
  const Program program(templated_source, "victim.cu");
  const CompileOptions options = options_with_everything(CompileTarget::ptx);
  try {
    detail::compile_in_worker(program, options, {hostile, "fds"}, quick_limits());
    ADD_FAILURE() << "the fds mode never answers";
  } catch (const Error& error) {
    std::set<std::string> held;
    const std::string& log = error.log();
    const std::size_t at = log.find("fds:");
    ASSERT_NE(at, std::string::npos) << log;
    std::string list = log.substr(at + 4, log.find('\n', at) - at - 4);
    for (std::size_t i = 0; i < list.size();) {
      const std::size_t start = list.find_first_not_of(' ', i);
      if (start == std::string::npos) break;
      const std::size_t end = list.find(' ', start);
      held.insert(list.substr(start, end - start));
      i = end == std::string::npos ? list.size() : end;
    }
    EXPECT_EQ(held, inheritable) << log;
  }
  for (const char* mode : {"crash", "hang", "flood", "garbage", "fail"}) {
    EXPECT_THROW(detail::compile_in_worker(program, options, {hostile, mode}, quick_limits()), Error) << mode;
  }
  detail::compile_in_worker(program, options, {worker}, detail::WorkerLimits{});
  // A leak is a descriptor open now that was not before. One open before may be gone: run
  // after other tests in one process (`cujit conformance`), descriptors of earlier tests'
  // objects close on their own schedule.
  std::set<std::string> leaked;
  for (const std::string& fd : open_descriptors()) {
    if (before.count(fd) == 0) leaked.insert(fd);
  }
  EXPECT_TRUE(leaked.empty()) << leaked.size() << " descriptors leaked, the first " << *leaked.begin();
}

LinkOptions sm90() {
  LinkOptions options;
  options.arch = Arch::parse("sm_90");
  return options;
}

std::vector<LinkableCode> two_sources() {
  return {LinkableCode::from_path(test::scenario_path("fixtures/dev_add.cu")),
          LinkableCode::from_path(test::scenario_path("fixtures/dev_mul.cu"))};
}

// Shown through the worker libcujit starts (CUJIT_COMPILE_WORKER, here one that crashes):
// two sources compile in workers, one source and the in-process switch do not.
// With no hedge the compile beside the one running here goes to a worker at once (either of
// the two may be the one that does).
TEST(CompileWorkerHostile, AddAllCompilesTwoSourcesInWorkersAndOneInProcess) {
  const ScopedVariable chosen("CUJIT_COMPILE_WORKER", hostile);
  const ScopedVariable mode("CUJIT_HOSTILE_WORKER_MODE", "crash");
  const ScopedVariable no_hedge("CUJIT_COMPILE_WORKER_HEDGE_MS", "0");
  CUJIT_EXPECT_ERROR(Linker(sm90(), BuildCache::disabled()).add_all(two_sources()), ErrorKind::compile, error,
                     const std::string what = error.what();
                     EXPECT_TRUE(what.find("dev_add.cu") != std::string::npos ||
                                 what.find("dev_mul.cu") != std::string::npos) << what;
                     EXPECT_NE(what.find("crashed"), std::string::npos) << what;);
  Linker one(sm90(), BuildCache::disabled());
  EXPECT_NO_THROW(one.add_all({two_sources()[0]}));
  const ScopedVariable in_process("CUJIT_COMPILE_IN_PROCESS", "1");
  Linker both(sm90(), BuildCache::disabled());
  EXPECT_NO_THROW(both.add_all(two_sources()));
  EXPECT_EQ(both.inputs().size(), 2u);
}

// NVRTC's automatic PCH lives in the process that built it: compiles asking for it stay.
TEST(CompileWorkerHostile, ACompileAskingForThePchStaysInProcess) {
  const ScopedVariable chosen("CUJIT_COMPILE_WORKER", hostile);
  const ScopedVariable mode("CUJIT_HOSTILE_WORKER_MODE", "crash");
  detail::CompileBatch batch(2, std::chrono::milliseconds(10));  // the other never comes
  const detail::CompileBatch::Item item(batch);
  const Program program(templated_source, "victim.cu");
  CompileOptions options = options_with_everything(CompileTarget::ptx);
  EXPECT_THROW(detail::compile_program(program, options), Error);
  options.options.push_back("-pch");
  EXPECT_NO_THROW(detail::compile_program(program, options));
}

// A compile that can read files is traced to key it by its headers (compile_cached); the
// worker writes the trace where the caller reads it, so the result is stored and found.
TEST(CompileWorker, ACompileInAWorkerIsKeyedByTheHeadersItRead) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "inc");
  dir.write("inc/val.h", "#define VAL 41\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // headers older than the compile
  BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
  CompileOptions options;
  options.arch = Arch::parse("sm_90");
  options.include_paths = {(dir.path() / "inc").string()};
  const Program program("#include \"val.h\"\nextern \"C\" __global__ void k(int* p) { *p = VAL; }\n", "k.cu");
  const ScopedVariable chosen("CUJIT_COMPILE_WORKER", worker);
  std::optional<CachedCompile> first;
  const VendorTime before = vendor_time();
  {
    detail::CompileBatch batch(2, std::chrono::milliseconds(10));  // takes a worker
    const detail::CompileBatch::Item item(batch);
    first = compile_cached(program, options, cache);
  }
  EXPECT_EQ((vendor_time() - before).nvrtc_calls, 0u) << "NVRTC ran in the worker, not here";
  EXPECT_EQ(first->source, CacheSource::built);
  EXPECT_FALSE(first->key.empty()) << "the compile was keyed by its headers";
  EXPECT_EQ(first->result.code.bytes(), program.compile(options).code.bytes());
  EXPECT_EQ(compile_cached(program, options, cache).source, CacheSource::memory);
}

// Which compiles of a batch go to workers: shown with the batch's own answers, no timing.
TEST(CompileBatch, TheOnlyCompileOfABatchStaysInProcess) {
  detail::CompileBatch batch(3);
  for (int i = 0; i < 2; ++i) {
    std::thread([&] { const detail::CompileBatch::Item hit(batch); }).join();  // cache hits
  }
  const detail::CompileBatch::Item item(batch);
  EXPECT_EQ(detail::CompileBatch::current(), &batch);
  EXPECT_FALSE(batch.compile_beside_others());
}

// Two at once: one runs here; the other waits for it (at most the hedge) and, since the
// first never ends here, takes a worker.
TEST(CompileBatch, OfTwoCompilesOneStaysAndTheOtherTakesAWorkerWhileTheFirstRuns) {
  detail::CompileBatch batch(2, std::chrono::milliseconds(250), std::chrono::milliseconds(20));
  bool answers[2] = {false, false};
  std::thread other([&] {
    const detail::CompileBatch::Item item(batch);
    answers[1] = batch.compile_beside_others();
  });
  {
    const detail::CompileBatch::Item item(batch);
    answers[0] = batch.compile_beside_others();
  }
  other.join();
  EXPECT_NE(answers[0], answers[1]) << "exactly one of the two runs in this process";
}

// A small compile ends within the hedge: the next one runs here after it, not in a worker
// (a worker's start costs more than such a compile).
TEST(CompileBatch, ACompileThatEndsWithinTheHedgeLeavesTheNextOneHere) {
  detail::CompileBatch batch(1, std::chrono::milliseconds(250), std::chrono::hours(1));
  const detail::CompileBatch::Item item(batch);
  EXPECT_FALSE(batch.compile_beside_others()) << "the first compile runs here";
  bool second = true;
  std::thread other([&] {
    const detail::CompileBatch::Item next(batch);
    second = batch.compile_beside_others();  // waits for the slot, at most the hedge
  });
  batch.finished_here();
  other.join();
  EXPECT_FALSE(second);
}

TEST(CompileBatch, ACompileWhoseOthersDoNotAnswerTakesAWorker) {
  detail::CompileBatch batch(2, std::chrono::milliseconds(10));
  const detail::CompileBatch::Item item(batch);
  EXPECT_TRUE(batch.compile_beside_others());
}

TEST(CompileBatch, OutsideAnItemThereIsNoBatch) {
  EXPECT_EQ(detail::CompileBatch::current(), nullptr);
  detail::CompileBatch batch(1);
  { const detail::CompileBatch::Item item(batch); }
  EXPECT_EQ(detail::CompileBatch::current(), nullptr);
}

TEST(CompileWorker, AddAllInWorkersGivesTheCodeOfAddingOneByOne) {
  const ScopedVariable chosen("CUJIT_COMPILE_WORKER", worker);
  const ScopedVariable no_hedge("CUJIT_COMPILE_WORKER_HEDGE_MS", "0");
  Linker one_by_one(sm90(), BuildCache::disabled());
  for (const LinkableCode& code : two_sources()) one_by_one.add(code);
  Linker all(sm90(), BuildCache::disabled());
  all.add_all(two_sources());
  ASSERT_EQ(all.inputs().size(), one_by_one.inputs().size());
  for (std::size_t i = 0; i < all.inputs().size(); ++i) {
    EXPECT_EQ(all.inputs()[i].bytes(), one_by_one.inputs()[i].bytes()) << all.inputs()[i].name();
  }
}

}  // namespace
}  // namespace cujit
