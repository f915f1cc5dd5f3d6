#include "link/link_worker.hpp"

#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <vector>

#include <unistd.h>

#include "code/linkable_code_access.hpp"
#include "compile/compile_worker.hpp"
#include "cujit/environment.hpp"
#include "cujit/error.hpp"
#include "link/failure_capture.hpp"
#include "support/record.hpp"
#include "support/spawner.hpp"

#ifdef CUJIT_VERSION
#define CUJIT_LINK_WORKER_VERSION CUJIT_VERSION
#else
#define CUJIT_LINK_WORKER_VERSION "unknown"
#endif

namespace cujit::detail {
namespace {

// Request and reply name the protocol: a worker of other sources refuses, never misreads.
constexpr const char* protocol = "cujit-link-worker 1 (" CUJIT_LINK_WORKER_VERSION ")";

std::string flag_text(bool value) { return value ? "1" : "0"; }

std::string optional_text(const std::optional<unsigned>& value) { return value ? std::to_string(*value) : ""; }
std::string optional_text(const std::optional<bool>& value) { return value ? flag_text(*value) : ""; }

// Optional fields: "" is none, else what `parse` makes of the text. False for a field that
// is missing or malformed, and `out` is left alone then.
template <class T, class Parse>
bool read_optional(const Record& record, const std::string& field, std::optional<T>& out, Parse parse) {
  const auto at = record.find(field);
  if (at == record.end()) return false;
  if (at->second.empty()) {
    out.reset();
    return true;
  }
  const std::optional<T> value = parse(at->second);
  if (!value) return false;
  out = *value;
  return true;
}

std::optional<unsigned> parse_unsigned(const std::string& text) {
  if (text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return static_cast<unsigned>(std::stoul(text));
}

std::optional<bool> parse_flag(const std::string& text) {
  if (text != "0" && text != "1") return std::nullopt;
  return text == "1";
}

std::optional<bool> read_flag(const Record& record, const std::string& field) {
  const auto at = record.find(field);
  return at == record.end() ? std::nullopt : parse_flag(at->second);
}

std::optional<ErrorKind> parse_kind(std::string_view text) {
  for (ErrorKind kind : {ErrorKind::compile, ErrorKind::link, ErrorKind::format, ErrorKind::unsupported,
                         ErrorKind::cuda, ErrorKind::nrt, ErrorKind::cache, ErrorKind::usage, ErrorKind::io}) {
    if (to_string(kind) == text) return kind;
  }
  return std::nullopt;
}

struct LinkRequest {
  std::vector<LinkableCode> inputs;
  LinkOptions options;
};

// nullopt: not a sound link request. Inputs are rebuilt through from_bytes, so the worker
// checks them as the caller did.
std::optional<LinkRequest> decode_link_request(std::string_view bytes) {
  const auto record = decode_record(bytes);
  if (!record || record->count("protocol") == 0 || record->at("protocol") != protocol) return std::nullopt;
  for (const char* field : {"arch"}) {
    if (record->count(field) == 0) return std::nullopt;
  }
  LinkRequest request;
  LinkOptions& options = request.options;
  try {
    options.arch = Arch::parse(record->at("arch"));
  } catch (const Error&) {
    return std::nullopt;
  }
  const auto arch_is_device = read_flag(*record, "arch_is_device");
  const auto lto = read_flag(*record, "lto");
  const auto debug = read_flag(*record, "debug");
  const auto line_info = read_flag(*record, "line_info");
  const auto verbose = read_flag(*record, "verbose");
  LinkFlags& flags = options.flags;
  const bool optionals_sound =
      read_optional(*record, "max_registers", flags.max_registers, parse_unsigned) &&
      read_optional(*record, "optimization_level", flags.optimization_level, parse_unsigned) &&
      read_optional(*record, "split_compile", flags.split_compile, parse_unsigned) &&
      read_optional(*record, "ftz", flags.ftz, parse_flag) && read_optional(*record, "prec_div", flags.prec_div, parse_flag) &&
      read_optional(*record, "prec_sqrt", flags.prec_sqrt, parse_flag) && read_optional(*record, "fma", flags.fma, parse_flag);
  auto kernels_used = get_record_list(*record, "kernels_used");
  auto variables_used = get_record_list(*record, "variables_used");
  auto ptxas_options = get_record_list(*record, "ptxas_options");
  auto nvjitlink_options = get_record_list(*record, "nvjitlink_options");
  auto formats = get_record_list(*record, "input_formats");
  auto names = get_record_list(*record, "input_names");
  auto contents = get_record_list(*record, "input_bytes");
  auto nrt = get_record_list(*record, "input_nrt");
  if (!arch_is_device || !lto || !debug || !line_info || !verbose || !optionals_sound || !kernels_used || !variables_used ||
      !ptxas_options || !nvjitlink_options || !formats || !names || !contents || !nrt ||
      names->size() != formats->size() || contents->size() != formats->size() || nrt->size() != formats->size()) {
    return std::nullopt;
  }
  options.arch_is_device = *arch_is_device;
  options.lto = *lto;
  options.backend = LinkerBackend::nvjitlink;
  options.flags.debug = *debug;
  options.flags.line_info = *line_info;
  options.flags.verbose = *verbose;
  options.flags.kernels_used = std::move(*kernels_used);
  options.flags.variables_used = std::move(*variables_used);
  options.flags.ptxas_options = std::move(*ptxas_options);
  options.nvjitlink_options = std::move(*nvjitlink_options);
  for (std::size_t i = 0; i < formats->size(); ++i) {
    const auto format = parse_format((*formats)[i]);
    if (!format || ((*nrt)[i] != "0" && (*nrt)[i] != "1")) return std::nullopt;
    request.inputs.push_back(LinkableCode::from_bytes(*format, std::move((*contents)[i]), std::move((*names)[i]))
                                 .set_nrt((*nrt)[i] == "1"));
  }
  return request;
}

std::string encode_linked(const LinkResult& result) {
  Record record{{"protocol", protocol},
                {"status", "linked"},
                {"cubin", result.code.bytes()},
                {"name", result.code.name()},
                {"info_log", result.info_log},
                {"arch", result.arch.sm()}};
  put_record_list(record, "dropped", result.dropped_duplicates);
  return encode_record(record);
}

std::string encode_failed(const Error& error) {
  Record record{{"protocol", protocol},
                {"status", "error"},
                {"kind", std::string(to_string(error.kind()))},
                {"component", error.component()},
                {"message", error.message()},
                {"log", error.log()}};
  const auto* link_error = dynamic_cast<const LinkError*>(&error);
  record["link_error"] = flag_text(link_error != nullptr);
  put_record_list(record, "unresolved", link_error != nullptr ? link_error->unresolved_symbols() : std::vector<std::string>{});
  put_record_list(record, "duplicates", link_error != nullptr ? link_error->duplicate_symbols() : std::vector<std::string>{});
  return encode_record(record);
}

// The worker's reply as the link's result, or its error thrown; nullopt when it is neither.
std::optional<IsolatedLink> decode_reply(std::string_view bytes) {
  const auto record = decode_record(bytes);
  if (!record || record->count("protocol") == 0 || record->at("protocol") != protocol || record->count("status") == 0) {
    return std::nullopt;
  }
  if (record->at("status") == "error") {
    for (const char* field : {"kind", "component", "message", "log"}) {
      if (record->count(field) == 0) return std::nullopt;
    }
    const auto kind = parse_kind(record->at("kind"));
    const auto link_error = read_flag(*record, "link_error");
    auto unresolved = get_record_list(*record, "unresolved");
    auto duplicates = get_record_list(*record, "duplicates");
    if (!kind || !link_error || !unresolved || !duplicates) return std::nullopt;
    if (*link_error) {
      throw LinkError(record->at("component"), record->at("message"), record->at("log"), std::move(*unresolved),
                      std::move(*duplicates));
    }
    throw Error(*kind, record->at("component"), record->at("message"), record->at("log"));
  }
  if (record->at("status") != "linked") return std::nullopt;
  for (const char* field : {"cubin", "name", "info_log", "arch"}) {
    if (record->count(field) == 0) return std::nullopt;
  }
  auto dropped = get_record_list(*record, "dropped");
  if (!dropped) return std::nullopt;
  IsolatedLink out;
  try {
    out.arch = Arch::parse(record->at("arch"));
  } catch (const Error&) {
    return std::nullopt;
  }
  out.cubin = record->at("cubin");
  out.name = record->at("name");
  out.info_log = record->at("info_log");
  out.dropped_duplicates = std::move(*dropped);
  return out;
}

// CUJIT_TEST_LINK_WORKER: a test seam acting only in the worker, so that the conformance
// suite can show a worker's death, runaway and memory blow-up becoming a LinkError:
// "SIGSEGV" raises it, "hang" sleeps, "allocate" maps and touches memory, each forever.
void test_seam() {
  const char* value = std::getenv("CUJIT_TEST_LINK_WORKER");
  if (value == nullptr || *value == '\0') return;
  const std::string_view seam(value);
  std::fprintf(stderr, "cujit-compile-worker: test seam CUJIT_TEST_LINK_WORKER=%s\n", value);
  if (seam == "SIGSEGV") std::raise(SIGSEGV);
  if (seam == "hang") {
    for (;;) ::pause();
  }
  if (seam == "allocate") {
    std::vector<std::unique_ptr<char[]>> held;
    for (;;) {
      held.emplace_back(new char[64 << 20]);
      std::memset(held.back().get(), 1, 64 << 20);
    }
  }
}

}  // namespace

bool link_isolated(const LinkOptions& options, LinkerBackend backend) {
  if (backend != LinkerBackend::nvjitlink) return false;
  return options.isolation.enabled || environment::flag("CUJIT_LINK_ISOLATE", false);
}

std::string link_worker_path() {
  const std::string candidate = compile_worker_candidate();
  if (candidate.empty()) {
    throw Error(ErrorKind::io, "Linker::link (isolated)",
                "an isolated link runs in cujit's worker (cujit-compile-worker), and this cujit has none: "
                "install it, or name one with CUJIT_COMPILE_WORKER");
  }
  TrustedExecutable checked;
  if (const auto refused = open_trusted_executable(candidate, checked)) {
    throw Error(ErrorKind::io, "Linker::link (isolated)",
                "an isolated link runs in cujit's worker, which may not run: " + refused->message() +
                    " (cujit runs only a worker owned by root or this user and writable by no one else; "
                    "CUJIT_COMPILE_WORKER names another)");
  }
  return candidate;
}

std::string encode_link_request(const std::vector<LinkableCode>& inputs, const LinkOptions& options) {
  const LinkFlags& flags = options.flags;
  Record record{{"protocol", protocol},
                {"arch", options.arch.sm()},
                {"arch_is_device", flag_text(options.arch_is_device)},
                {"lto", flag_text(options.lto)},
                {"debug", flag_text(flags.debug)},
                {"line_info", flag_text(flags.line_info)},
                {"verbose", flag_text(flags.verbose)},
                {"max_registers", optional_text(flags.max_registers)},
                {"optimization_level", optional_text(flags.optimization_level)},
                {"split_compile", optional_text(flags.split_compile)},
                {"ftz", optional_text(flags.ftz)},
                {"prec_div", optional_text(flags.prec_div)},
                {"prec_sqrt", optional_text(flags.prec_sqrt)},
                {"fma", optional_text(flags.fma)}};
  put_record_list(record, "kernels_used", flags.kernels_used);
  put_record_list(record, "variables_used", flags.variables_used);
  put_record_list(record, "ptxas_options", flags.ptxas_options);
  put_record_list(record, "nvjitlink_options", options.nvjitlink_options);
  std::vector<std::string> formats, names, contents, nrt;
  for (const LinkableCode& code : inputs) {
    formats.emplace_back(to_string(code.format()));
    names.push_back(code.name());
    contents.push_back(code.bytes());
    nrt.push_back(flag_text(code.nrt()));
  }
  put_record_list(record, "input_formats", formats);
  put_record_list(record, "input_names", names);
  put_record_list(record, "input_bytes", contents);
  put_record_list(record, "input_nrt", nrt);
  return encode_record(record);
}

IsolatedLink link_in_worker(const std::vector<LinkableCode>& inputs, const LinkOptions& options,
                            const std::vector<std::string>& argv, const WorkerLimits& limits,
                            const std::string& what) {
  const WorkerRun run = run_worker(argv, encode_link_request(inputs, options), limits);
  const std::string component = "Linker::link (isolated, worker " + (argv.empty() ? std::string("none") : argv.front()) + ")";
  if (!run.succeeded()) {
    throw LinkError(component, what + " in a worker process failed: the worker " + run.describe(limits),
                    run.stderr_tail, {}, {});
  }
  auto result = decode_reply(run.reply);
  if (!result) {
    throw LinkError(component,
                    what + " in a worker process failed: its reply (" + std::to_string(run.reply.size()) +
                        " bytes) is not a link result",
                    run.stderr_tail, {}, {});
  }
  return std::move(*result);
}

bool is_link_request(std::string_view request) {
  const auto record = decode_record(request);
  return record && record->count("protocol") != 0 && record->at("protocol").rfind("cujit-link-worker ", 0) == 0;
}

int serve_link_request(std::string_view request, int out) {
  std::string reply;
  std::string names;  // the inputs, for an error that is not cujit's own
  try {
    const auto decoded = decode_link_request(request);
    if (!decoded) {
      std::fprintf(stderr, "cujit-compile-worker: the request on stdin is not a link request of %s\n", protocol);
      return 2;
    }
    for (const LinkableCode& code : decoded->inputs) names += (names.empty() ? "" : ", ") + code.name();
    test_seam();
    // The worker links in-process: an inherited CUJIT_LINK_ISOLATE would start a worker of
    // its own, and so on. A failure is captured by the caller (link/failure_capture.hpp),
    // not also here.
    ::unsetenv("CUJIT_LINK_ISOLATE");
    const CaptureSuppressed no_capture;
    Linker linker(decoded->options, BuildCache::disabled());
    for (const LinkableCode& code : decoded->inputs) linker.add(code);
    reply = encode_linked(linker.link());
  } catch (const Error& error) {
    reply = encode_failed(error);
  } catch (const std::exception& error) {
    // Out of memory (the caller's memory limit) or a library's exception: a link error
    // naming the inputs, as the worker's death would be.
    reply = encode_failed(LinkError("cujit-compile-worker (link)",
                                    "linking " + names + " in the worker failed: " + error.what(), "", {}, {}));
  }
  return write_worker_reply(out, reply) ? 0 : 3;
}

}  // namespace cujit::detail
