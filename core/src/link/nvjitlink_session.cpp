// The nvJitLink backend of the Linker.
#include <atomic>
#include <deque>
#include <memory>

#include "support/handle_counts.hpp"
#include "cujit/error.hpp"
#include "link/link_log.hpp"
#include "link/link_session.hpp"
#include "link/nvjitlink_api.hpp"
#include "link/nvjitlink_test_hook.hpp"
#include "support/stderr_capture.hpp"
#include "support/vendor_call.hpp"

namespace cujit::detail {
namespace {


std::string result_name(nvJitLinkResult result) {
  switch (result) {
    case NVJITLINK_SUCCESS: return "NVJITLINK_SUCCESS";
    case NVJITLINK_ERROR_UNRECOGNIZED_OPTION: return "NVJITLINK_ERROR_UNRECOGNIZED_OPTION";
    case NVJITLINK_ERROR_MISSING_ARCH: return "NVJITLINK_ERROR_MISSING_ARCH";
    case NVJITLINK_ERROR_INVALID_INPUT: return "NVJITLINK_ERROR_INVALID_INPUT";
    case NVJITLINK_ERROR_PTX_COMPILE: return "NVJITLINK_ERROR_PTX_COMPILE";
    case NVJITLINK_ERROR_NVVM_COMPILE: return "NVJITLINK_ERROR_NVVM_COMPILE";
    case NVJITLINK_ERROR_INTERNAL: return "NVJITLINK_ERROR_INTERNAL";
    case NVJITLINK_ERROR_THREADPOOL: return "NVJITLINK_ERROR_THREADPOOL";
    case NVJITLINK_ERROR_UNRECOGNIZED_INPUT: return "NVJITLINK_ERROR_UNRECOGNIZED_INPUT";
    case NVJITLINK_ERROR_FINALIZE: return "NVJITLINK_ERROR_FINALIZE";
    case NVJITLINK_ERROR_NULL_INPUT: return "NVJITLINK_ERROR_NULL_INPUT";
    case NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS: return "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS";
    case NVJITLINK_ERROR_INCORRECT_INPUT_TYPE: return "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE";
    case NVJITLINK_ERROR_ARCH_MISMATCH: return "NVJITLINK_ERROR_ARCH_MISMATCH";
    case NVJITLINK_ERROR_OUTDATED_LIBRARY: return "NVJITLINK_ERROR_OUTDATED_LIBRARY";
    case NVJITLINK_ERROR_MISSING_FATBIN: return "NVJITLINK_ERROR_MISSING_FATBIN";
    case NVJITLINK_ERROR_UNRECOGNIZED_ARCH: return "NVJITLINK_ERROR_UNRECOGNIZED_ARCH";
    case NVJITLINK_ERROR_UNSUPPORTED_ARCH: return "NVJITLINK_ERROR_UNSUPPORTED_ARCH";
    default: return "nvJitLinkResult " + std::to_string(static_cast<int>(result));
  }
}

std::atomic<NvJitLinkStepHook> step_hook{nullptr};
std::atomic<void*> step_hook_context{nullptr};

void run_step_hook(const char* call, const void* data, std::size_t size) {
  if (const NvJitLinkStepHook hook = step_hook.load(std::memory_order_acquire)) {
    hook(call, data, size, step_hook_context.load(std::memory_order_acquire));
  }
}

class NvJitLinkSession final : public LinkSession {
 public:
  NvJitLinkSession(const Arch& arch, bool lto, const std::vector<std::string>& extra)
      : tag_(unique_stderr_tag()), capture_(tag_) {
    std::vector<std::string> options{"-arch=" + arch.sm()};
    if (lto) options.emplace_back("-lto");
    options.insert(options.end(), extra.begin(), extra.end());
    std::vector<const char*> pointers;
    for (const std::string& option : options) pointers.push_back(option.c_str());
    const nvJitLinkResult result =
        nvjitlink().nvJitLinkCreate(&handle_, static_cast<std::uint32_t>(pointers.size()),
                                  pointers.data());
    if (result != NVJITLINK_SUCCESS) {
      // A failed create can still hand back a handle holding the reason: read its log,
      // then release it (it leaked about 1 KB per failure before).
      const std::string log = handle_ != nullptr ? raw_error_log() : "";
      if (handle_ != nullptr) nvjitlink().nvJitLinkDestroy(&handle_);
      handle_ = nullptr;
      std::string joined;
      for (const std::string& option : options) joined += " " + option;
      throw Error(ErrorKind::link, "nvJitLink (nvJitLinkCreate)",
                  "creating a link for" + joined + " failed: " + result_name(result), log);
    }
    handle_created(HandleKind::link_session);
  }
  ~NvJitLinkSession() override {
    if (handle_ != nullptr) {
      nvjitlink().nvJitLinkDestroy(&handle_);
      handle_released(HandleKind::link_session);
    }
  }
  NvJitLinkSession(const NvJitLinkSession&) = delete;
  NvJitLinkSession& operator=(const NvJitLinkSession&) = delete;

  StepStatus add(const LinkableCode& code) override {
    const auto type = static_cast<nvJitLinkInputType>(traits(code.format()).nvjitlink_input);
    // nvJitLink keeps the name pointer and reads it again when it writes the log at
    // completion: the session owns every name for as long as the link lives.
    // The tag marks what nvJitLink prints about this session's inputs (see captured()).
    names_.push_back((code.name().empty() ? "unnamed " + std::string(to_string(code.format())) : code.name()) +
                     tag_);
    const char* name = names_.back().c_str();
    return captured("nvJitLinkAddData", false, [&] {
      run_step_hook("nvJitLinkAddData", code.bytes().data(), code.bytes().size());
      return nvjitlink().nvJitLinkAddData(handle_, type, code.bytes().data(), code.bytes().size(),
                                        name);
    });
  }

  StepStatus complete() override {
    return captured("nvJitLinkComplete", true, [&] {
      run_step_hook("nvJitLinkComplete", nullptr, 0);
      return nvjitlink().nvJitLinkComplete(handle_);
    });
  }

  std::string info_log() const override {
    return without_tag(read_log(nvjitlink().nvJitLinkGetInfoLogSize, nvjitlink().nvJitLinkGetInfoLog),
                       tag_);
  }
  std::string error_log() const override {
    return without_tag(raw_error_log(), tag_) + stderr_messages_;
  }

  StepStatus cubin(Bytes& image) const override {
    std::size_t size = 0;
    nvJitLinkResult result = nvjitlink().nvJitLinkGetLinkedCubinSize(handle_, &size);
    if (result != NVJITLINK_SUCCESS) return {false, "nvJitLinkGetLinkedCubinSize", result_name(result)};
    if (size == 0) return {false, "nvJitLinkGetLinkedCubinSize", "an empty cubin"};
    image.assign(size, '\0');
    result = nvjitlink().nvJitLinkGetLinkedCubin(handle_, image.data());
    if (result != NVJITLINK_SUCCESS) return {false, "nvJitLinkGetLinkedCubin", result_name(result)};
    return {};
  }

  std::string backend_name() const override { return "nvJitLink"; }

 private:
  // nvJitLink 13.0 reports some errors only as "@E@" lines on stderr, with
  // NVJITLINK_SUCCESS: multiple definitions involving code inside a fatbin, object or
  // archive, and a declaration whose prototype does not match its definition, on every input
  // mix (PTX only included; the session once listened only where a fatbin, object or archive
  // was linked, and returned a cubin that faulted when launched). So every call that can
  // print (AddData, Complete) is followed by reading what the session's capture heard, and
  // such lines that name this session's (tagged) inputs make the step fail; nothing another
  // thread prints can. The tap stays installed between links and the session joins it once
  // (support/stderr_capture.hpp). What an AddData that succeeded printed is read with
  // Complete's (`read_now` false: the lines wait in the tap's journal), so a link pays one
  // non-blocking read, plus one per failed step; a mismatch nvJitLink prints while adding
  // then fails the link at completion, with the same message.
  template <class Call>
  StepStatus captured(const char* name, bool read_now, Call call) {
    const nvJitLinkResult result = call();
    std::string messages = read_now || result != NVJITLINK_SUCCESS ? capture_.take() : std::string();
    stderr_messages_ += messages;
    return status(name, result, messages);
  }

  static StepStatus status(const char* name, nvJitLinkResult result, const std::string& stderr_messages) {
    StepStatus step{result == NVJITLINK_SUCCESS, name, result_name(result),
                    result == NVJITLINK_ERROR_OUTDATED_LIBRARY};
    if (step.ok && has_error_line(stderr_messages)) {
      step.ok = false;
      step.status = "errors reported only on stderr";
    }
    return step;
  }

  template <class SizeFn, class GetFn>
  std::string read_log(SizeFn size_fn, GetFn get_fn) const {
    std::size_t size = 0;
    if (size_fn(handle_, &size) != NVJITLINK_SUCCESS || size <= 1) return {};
    std::string log(size, '\0');
    if (get_fn(handle_, log.data()) != NVJITLINK_SUCCESS) return {};
    log.resize(size - 1);
    return log;
  }

  std::string raw_error_log() const {
    return read_log(nvjitlink().nvJitLinkGetErrorLogSize, nvjitlink().nvJitLinkGetErrorLog);
  }

  nvJitLinkHandle handle_ = nullptr;
  std::string tag_;  // marks this session's input names on stderr
  StderrCapture capture_;  // joined for the session's life: one join and leave per link
  std::deque<std::string> names_;  // stable addresses: see add()
  std::string stderr_messages_;
};

}  // namespace

void set_nvjitlink_step_hook(NvJitLinkStepHook hook, void* context) noexcept {
  step_hook_context.store(context, std::memory_order_release);
  step_hook.store(hook, std::memory_order_release);
}

std::unique_ptr<LinkSession> open_nvjitlink_session(const Arch& arch, bool lto,
                                                    const std::vector<std::string>& extra) {
  return std::make_unique<NvJitLinkSession>(arch, lto, extra);
}

std::string nvjitlink_version_string() {
  static const std::string version = [] {
    try {
      unsigned major = 0, minor = 0;
      if (nvjitlink().nvJitLinkVersion(&major, &minor) != NVJITLINK_SUCCESS) return std::string("unknown");
      return std::to_string(major) + "." + std::to_string(minor);
    } catch (const Error& error) {
      return "unavailable (" + error.message() + ")";
    }
  }();
  return version;
}

}  // namespace cujit::detail
