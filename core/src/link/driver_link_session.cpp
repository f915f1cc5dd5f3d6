// The Driver API (cuLink*) backend of the Linker.
#include <array>
#include <deque>
#include <cstdint>
#include <cstring>
#include <memory>

#include "support/handle_counts.hpp"
#include "cujit/error.hpp"
#include "driver/driver_api.hpp"
#include "link/link_session.hpp"

namespace cujit::detail {
namespace {

constexpr std::size_t log_capacity = 1 << 16;

CUjit_target jit_target(const Arch& arch) {
  int base = 0;
  if (arch.suffix() == 'a') base = CU_COMPUTE_ACCELERATED_TARGET_BASE;
  if (arch.suffix() == 'f') base = CU_COMPUTE_FAMILY_TARGET_BASE;
  return static_cast<CUjit_target>(base + arch.number());
}

// The CU_JIT_* options of a link: the two log buffers, the target and the typed flags the
// driver honours (check_link_options has refused the others). The driver keeps pointers to
// both arrays and writes the used log sizes back into the values on later cuLink* calls:
// they live as long as the link state.
class DriverJitOptions {
 public:
  DriverJitOptions(const Arch& arch, const LinkFlags& flags, char* info, char* error) {
    add(CU_JIT_INFO_LOG_BUFFER, info);
    add(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, log_capacity);
    add(CU_JIT_ERROR_LOG_BUFFER, error);
    add(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, log_capacity);
    add(CU_JIT_TARGET, static_cast<std::uintptr_t>(jit_target(arch)));
    if (flags.verbose) add(CU_JIT_LOG_VERBOSE, 1);
    if (flags.debug) add(CU_JIT_GENERATE_DEBUG_INFO, 1);
    if (flags.line_info) add(CU_JIT_GENERATE_LINE_INFO, 1);
    if (flags.max_registers) add(CU_JIT_MAX_REGISTERS, *flags.max_registers);
    if (flags.optimization_level) add(CU_JIT_OPTIMIZATION_LEVEL, *flags.optimization_level);
    if (flags.split_compile) add(CU_JIT_SPLIT_COMPILE, *flags.split_compile);
  }

  unsigned count() const noexcept { return static_cast<unsigned>(size_); }
  CUjit_option* options() noexcept { return options_.data(); }
  void** values() noexcept { return values_.data(); }

 private:
  void add(CUjit_option option, std::uintptr_t value) { add(option, reinterpret_cast<void*>(value)); }
  void add(CUjit_option option, void* value) {
    options_[size_] = option;
    values_[size_] = value;
    ++size_;
  }

  // Fixed arrays: at most the five always there and the six flags, no allocation.
  static constexpr std::size_t capacity = 11;
  std::array<CUjit_option, capacity> options_{};
  std::array<void*, capacity> values_{};
  std::size_t size_ = 0;
};

// A log buffer the driver writes a C string into. Only its first and last bytes are set:
// zeroing 64 KiB twice per link was most of the session's own cost, and the last NUL bounds
// every read whatever the driver writes.
class LogBuffer {
 public:
  LogBuffer() : text_(new char[log_capacity]) {
    text_[0] = '\0';
    text_[log_capacity - 1] = '\0';
  }
  char* data() noexcept { return text_.get(); }
  std::string text() const { return std::string(text_.get(), strnlen(text_.get(), log_capacity)); }

 private:
  std::unique_ptr<char[]> text_;
};

class DriverLinkSession final : public LinkSession {
 public:
  DriverLinkSession(const Arch& arch, const LinkFlags& flags)
      : options_(arch, flags, info_.data(), error_.data()) {
    const DriverApi& api = driver();
    ensure_context();
    const CUresult result = api.cuLinkCreate(options_.count(), options_.options(), options_.values(), &state_);
    if (result != CUDA_SUCCESS) {
      state_ = nullptr;
      throw CudaError("driver linker (cuLinkCreate)", result,
                      "creating a link for " + arch.sm() + " failed: " + describe(result),
                      error_.text());
    }
    handle_created(HandleKind::link_session);
  }
  ~DriverLinkSession() override {
    if (state_ != nullptr) {
      driver().cuLinkDestroy(state_);
      handle_released(HandleKind::link_session);
    }
  }
  DriverLinkSession(const DriverLinkSession&) = delete;
  DriverLinkSession& operator=(const DriverLinkSession&) = delete;

  StepStatus add(const LinkableCode& code) override {
    const auto type = static_cast<CUjitInputType>(traits(code.format()).driver_input);
    // PTX is read as a C string: hand over its terminating NUL too. The name is kept for
    // the link's lifetime, as for nvJitLink, in case the log refers to it later.
    const std::size_t size = code.bytes().size() + (code.format() == Format::ptx ? 1 : 0);
    names_.push_back(code.name().empty() ? "unnamed " + std::string(to_string(code.format())) : code.name());
    return status("cuLinkAddData",
                  driver().cuLinkAddData(state_, type, const_cast<char*>(code.bytes().data()),
                                         size, names_.back().c_str(), 0, nullptr, nullptr));
  }

  StepStatus complete() override {
    const CUresult result = driver().cuLinkComplete(state_, &image_, &image_size_);
    if (result != CUDA_SUCCESS) image_ = nullptr;
    return status("cuLinkComplete", result);
  }

  std::string info_log() const override { return info_.text(); }
  std::string error_log() const override { return error_.text(); }
  StepStatus cubin(Bytes& image) const override {
    if (image_ == nullptr || image_size_ == 0) return {false, "cuLinkComplete", "an empty image"};
    // The image belongs to the link state, which lives as long as the session: one copy,
    // straight into the result.
    image.assign(static_cast<const char*>(image_), image_size_);
    return {};
  }
  std::string backend_name() const override { return "driver linker (cuLink*)"; }

 private:
  // The status text only for a failure: describing success costs two driver calls.
  static StepStatus status(const char* call, CUresult result) {
    if (result == CUDA_SUCCESS) return StepStatus{true, call, "CUDA_SUCCESS"};
    return StepStatus{false, call, describe(result)};
  }

  LogBuffer info_;
  LogBuffer error_;
  DriverJitOptions options_;  // after the buffers it points into
  CUlinkState state_ = nullptr;
  std::deque<std::string> names_;
  void* image_ = nullptr;
  std::size_t image_size_ = 0;
};

}  // namespace

std::unique_ptr<LinkSession> open_driver_session(const Arch& arch, const LinkFlags& flags) {
  return std::make_unique<DriverLinkSession>(arch, flags);
}

}  // namespace cujit::detail
