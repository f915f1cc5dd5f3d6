#include "compile/compile_worker.hpp"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>

#include "cujit/environment.hpp"
#include "cujit/error.hpp"
#include "support/spawner.hpp"
#include "support/record.hpp"

#ifndef CUJIT_COMPILE_WORKER_DEFAULT
#define CUJIT_COMPILE_WORKER_DEFAULT ""
#endif
#ifndef CUJIT_COMPILE_WORKER_BUILD_TREE
#define CUJIT_COMPILE_WORKER_BUILD_TREE ""
#endif
#ifndef CUJIT_COMPILE_WORKER_INSTALLED
#define CUJIT_COMPILE_WORKER_INSTALLED ""
#endif
#ifdef CUJIT_VERSION
#define CUJIT_WORKER_LIBRARY_VERSION CUJIT_VERSION
#else
#define CUJIT_WORKER_LIBRARY_VERSION "unknown"
#endif

namespace cujit::detail {
namespace {

constexpr std::size_t request_limit = std::size_t{1} << 30;
constexpr const char* lowered_prefix = "lowered:";
// Request and reply name the protocol; a worker built from other sources (an old build
// tree, a CUJIT_COMPILE_WORKER from elsewhere) refuses, rather than misread, a request.
constexpr const char* protocol = "cujit-compile-worker 1 (" CUJIT_WORKER_LIBRARY_VERSION ")";

std::optional<ErrorKind> parse_error_kind(std::string_view text) {
  for (ErrorKind kind : {ErrorKind::compile, ErrorKind::link, ErrorKind::format, ErrorKind::unsupported,
                         ErrorKind::cuda, ErrorKind::nrt, ErrorKind::cache, ErrorKind::usage, ErrorKind::io}) {
    if (to_string(kind) == text) return kind;
  }
  return std::nullopt;
}

std::string encode_reply(const CompileResult& result) {
  Record record{{"protocol", protocol}, {"status", "compiled"}, {"code", result.code.bytes()}, {"log", result.log}};
  put_record_list(record, "options", result.options);
  for (const auto& [expression, lowered] : result.code.lowered_names()) record[lowered_prefix + expression] = lowered;
  return encode_record(record);
}

std::string encode_error_reply(const Error& error) {
  return encode_record(Record{{"protocol", protocol},
                              {"status", "error"},
                              {"kind", std::string(to_string(error.kind()))},
                              {"component", error.component()},
                              {"message", error.message()},
                              {"log", error.log()}});
}

// The compile's result, or its error thrown; nullopt when the reply is not one.
std::optional<CompileResult> decode_reply(std::string_view bytes, const Program& program,
                                          const CompileOptions& options) {
  const auto record = decode_record(bytes);
  if (!record || record->count("status") == 0 || record->count("log") == 0 ||
      record->count("protocol") == 0 || record->at("protocol") != protocol) {
    return std::nullopt;
  }
  const std::string& status = record->at("status");
  if (status == "error") {
    if (record->count("kind") == 0 || record->count("component") == 0 || record->count("message") == 0) {
      return std::nullopt;
    }
    const auto kind = parse_error_kind(record->at("kind"));
    if (!kind) return std::nullopt;
    throw Error(*kind, record->at("component"), record->at("message"), record->at("log"));
  }
  if (status != "compiled" || record->count("code") == 0) return std::nullopt;
  auto used_options = get_record_list(*record, "options");
  if (!used_options) return std::nullopt;
  std::map<std::string, std::string> lowered;
  for (const auto& [field, value] : *record) {
    if (field.rfind(lowered_prefix, 0) == 0) lowered.emplace(field.substr(std::string_view(lowered_prefix).size()), value);
  }
  if (lowered.size() != options.name_expressions.size()) return std::nullopt;
  try {
    LinkableCode code = compiled_code(record->at("code"), program.name(), options.target);
    return CompileResult{std::move(code).set_lowered_names(std::move(lowered)), record->at("log"),
                         std::move(*used_options)};
  } catch (const Error&) {
    return std::nullopt;  // bytes that are not the target's format
  }
}

std::string read_all(int fd, std::size_t limit, bool& too_long) {
  std::string text;
  std::array<char, 65536> buffer{};
  for (;;) {
    const ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return text;
    if (text.size() + static_cast<std::size_t>(got) > limit) {
      too_long = true;
      return text;
    }
    text.append(buffer.data(), static_cast<std::size_t>(got));
  }
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t wrote = ::write(fd, bytes.data(), bytes.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(wrote));
  }
  return true;
}

}  // namespace

namespace {

// The file this code was loaded from: the executable that linked libcujit.a, or a shared
// object that did. The main program's name in dladdr is not reliable (argv[0], possibly
// relative), so it is read from /proc/self/exe.
struct ImageSearch {
  std::uintptr_t address = 0;
  bool in_main_program = false;
};

int find_main_program(dl_phdr_info* info, std::size_t, void* data) {
  auto* search = static_cast<ImageSearch*>(data);
  // The first object listed is the main program.
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (search->address >= start && search->address < start + segment.p_memsz) search->in_main_program = true;
  }
  return 1;
}

std::filesystem::path own_image() {
  ImageSearch search{reinterpret_cast<std::uintptr_t>(&find_main_program)};
  ::dl_iterate_phdr(find_main_program, &search);
  std::error_code error;
  if (search.in_main_program) return std::filesystem::read_symlink("/proc/self/exe", error);
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&find_main_program), &info) == 0 || info.dli_fname == nullptr) return {};
  return std::filesystem::canonical(info.dli_fname, error);
}

// Whether `path` lies inside `dir` (both resolved; a directory that no longer exists
// contains nothing). `dir` is the build tree, a path fixed at build time: it counts only
// while it is a directory as written, owned by root or this user in directories of the same
// kind; a gone tree whose path someone else recreated or linked elsewhere is not this
// program's (red-team finding F4).
bool inside(const std::filesystem::path& path, const std::string& dir) {
  if (dir.empty() || path.empty()) return false;
  if (check_trusted_directory_as_written(dir)) return false;
  std::error_code error;
  const std::filesystem::path root = std::filesystem::canonical(dir, error);
  if (error) return false;
  const std::string text = path.string(), prefix = root.string() + "/";
  return text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

std::string compile_worker_candidate() {
  if (const auto chosen = environment::absolute_path("CUJIT_COMPILE_WORKER")) return *chosen;
  // A program of the build tree uses the build tree's worker; anything else, never: once
  // installed, the build tree may be gone and its paths anyone's to fill.
  const std::filesystem::path image = own_image();
  if (inside(image, CUJIT_COMPILE_WORKER_BUILD_TREE)) return CUJIT_COMPILE_WORKER_DEFAULT;
  // Installed: beside this program (<prefix>/bin or <prefix>/lib -> <prefix>/libexec/cujit)
  // when that prefix holds a worker root or this user installed (its directory and every one
  // above owned by them and writable by no one else), else where the build was configured to
  // install it. Any program linking libcujit.a comes here: a program in /tmp/<d>/ must not
  // take a /tmp/libexec/cujit that another user made (red-team finding F1).
  if (!image.empty()) {
    const std::filesystem::path beside = image.parent_path().parent_path() / "libexec" / "cujit" / "cujit-compile-worker";
    std::error_code error;
    // As written too: <prefix> may be /tmp, and /tmp/libexec another user's link
    // (red-team finding, 2026-11-28).
    if (std::filesystem::exists(beside, error) && !check_trusted_directory_as_written(beside.parent_path().string())) {
      return beside.string();
    }
  }
  return CUJIT_COMPILE_WORKER_INSTALLED;
}

std::optional<std::string> compile_worker_path() {
  if (environment::flag("CUJIT_COMPILE_IN_PROCESS", false)) return std::nullopt;
  const std::string candidate = compile_worker_candidate();
  if (candidate.empty()) return std::nullopt;
  TrustedExecutable checked;
  if (const auto refused = open_trusted_executable(candidate, checked)) {
    // No worker: compile in-process. One that is there but may not run: compile in-process
    // too, and say so once (failing every compile would let whoever can plant a file stop
    // every build, red-team finding F1). CUJIT_COMPILE_WORKER named by the caller is a
    // configuration error, typed.
    if (refused->problem == ExecutableProblem::missing) return std::nullopt;
    const std::string why = refused->message() +
                            "; cujit runs only a worker owned by root or this user and writable by no one else "
                            "(CUJIT_COMPILE_WORKER names another, CUJIT_COMPILE_IN_PROCESS=1 compiles without one)";
    if (environment::absolute_path("CUJIT_COMPILE_WORKER")) {
      throw Error(ErrorKind::io, "compile worker (executable check)", why);
    }
    static std::once_flag warned;
    std::call_once(warned, [&] { std::fprintf(stderr, "cujit: warning: %s; compiling in-process\n", why.c_str()); });
    return std::nullopt;
  }
  return candidate;
}

namespace {
// NVRTC's automatic precompiled header lives in the process that made it: a worker would
// start without it each time, so compiles that ask for it stay in-process.
bool uses_pch(const CompileOptions& options) {
  for (const std::string& option : options.options) {
    if (option == "-pch" || option == "--pch") return true;
  }
  return false;
}
}  // namespace

CompileResult compile_program(const Program& program, const CompileOptions& options) {
  CompileBatch* batch = CompileBatch::current();
  if (batch == nullptr || uses_pch(options)) return program.compile(options);
  const auto worker = compile_worker_path();
  if (!worker) return program.compile(options);
  if (!batch->compile_beside_others()) {
    struct SlotHeld {
      CompileBatch& batch;
      ~SlotHeld() { batch.finished_here(); }
    } held{*batch};
    return program.compile(options);
  }
  WorkerLimits limits;
  // At least a second, at most a day: a deadline past the clock's range would wrap.
  const std::uint64_t seconds = environment::count("CUJIT_COMPILE_WORKER_TIMEOUT", 600);
  limits.timeout = std::chrono::seconds(std::clamp<std::uint64_t>(seconds, 1, 86'400));
  return compile_in_worker(program, options, {*worker}, limits);
}

CompileResult compile_in_worker(const Program& program, const CompileOptions& options,
                                const std::vector<std::string>& worker_argv, const WorkerLimits& limits) {
  const WorkerRun run = run_worker(worker_argv, encode_compile_request(program, options), limits);
  const std::string component =
      "compile worker (" + (worker_argv.empty() ? std::string("none") : worker_argv.front()) + ")";
  if (!run.succeeded()) {
    throw Error(ErrorKind::compile, component,
                "compiling '" + program.name() + "' in a worker process failed: the worker " +
                    run.describe(limits),
                run.stderr_tail);
  }
  auto result = decode_reply(run.reply, program, options);
  if (!result) {
    throw Error(ErrorKind::compile, component,
                "compiling '" + program.name() + "' in a worker process failed: its reply (" +
                    std::to_string(run.reply.size()) + " bytes) is not a compile result",
                run.stderr_tail);
  }
  return std::move(*result);
}

std::string encode_compile_request(const Program& program, const CompileOptions& options) {
  Record record{{"protocol", protocol},
                {"source", program.source()},
                {"name", program.name()},
                {"arch", options.arch.sm()},
                {"target", std::string(to_string(options.target))},
                {"relocatable", options.relocatable ? "1" : "0"}};
  put_record_list(record, "include_paths", options.include_paths);
  std::vector<std::string> header_names, header_contents;
  for (const Header& header : options.headers) {
    header_names.push_back(header.name);
    header_contents.push_back(header.content);
  }
  put_record_list(record, "header_names", header_names);
  put_record_list(record, "header_contents", header_contents);
  put_record_list(record, "name_expressions", options.name_expressions);
  put_record_list(record, "options", options.options);
  return encode_record(record);
}

std::optional<std::pair<Program, CompileOptions>> decode_compile_request(std::string_view bytes) {
  const auto record = decode_record(bytes);
  if (!record) return std::nullopt;
  for (const char* field : {"protocol", "source", "name", "arch", "target", "relocatable"}) {
    if (record->count(field) == 0) return std::nullopt;
  }
  if (record->at("protocol") != protocol) return std::nullopt;
  const auto target = parse_compile_target(record->at("target"));
  auto include_paths = get_record_list(*record, "include_paths");
  auto header_names = get_record_list(*record, "header_names");
  auto header_contents = get_record_list(*record, "header_contents");
  auto name_expressions = get_record_list(*record, "name_expressions");
  auto extra = get_record_list(*record, "options");
  const std::string& relocatable = record->at("relocatable");
  if (!target || !include_paths || !header_names || !header_contents || !name_expressions || !extra ||
      header_names->size() != header_contents->size() || (relocatable != "0" && relocatable != "1")) {
    return std::nullopt;
  }
  CompileOptions options;
  try {
    options.arch = Arch::parse(record->at("arch"));
  } catch (const Error&) {
    return std::nullopt;
  }
  options.target = *target;
  options.relocatable = relocatable == "1";
  options.include_paths = std::move(*include_paths);
  for (std::size_t i = 0; i < header_names->size(); ++i) {
    options.headers.push_back(Header{std::move((*header_names)[i]), std::move((*header_contents)[i])});
  }
  options.name_expressions = std::move(*name_expressions);
  options.options = std::move(*extra);
  return std::make_pair(Program(record->at("source"), record->at("name")), std::move(options));
}

std::optional<std::string> read_worker_request(int in) {
  bool too_long = false;
  std::string request = read_all(in, request_limit, too_long);
  if (too_long) return std::nullopt;
  return request;
}

bool write_worker_reply(int out, std::string_view reply) { return write_all(out, reply); }

int serve_compile_request(int in, int out) {
  const std::optional<std::string> request = read_worker_request(in);
  if (!request) {
    std::fprintf(stderr, "cujit-compile-worker: the request on stdin is over the limit\n");
    return 2;
  }
  return serve_compile_request(*request, out);
}

int serve_compile_request(std::string_view request, int out) {
  const auto decoded = decode_compile_request(request);
  if (!decoded) {
    std::fprintf(stderr, "cujit-compile-worker: the request on stdin is not a compile request of %s\n", protocol);
    return 2;
  }
  std::string reply;
  try {
    reply = encode_reply(decoded->first.compile(decoded->second));
  } catch (const Error& error) {
    reply = encode_error_reply(error);
  } catch (const std::exception& error) {
    reply = encode_error_reply(Error(ErrorKind::compile, "cujit-compile-worker",
                                     "compiling '" + decoded->first.name() + "' failed: " + error.what()));
  }
  return write_all(out, reply) ? 0 : 3;
}

}  // namespace cujit::detail
