// The Driver API (cuLink*) backend of the Linker.
#include <array>
#include <deque>
#include <cstdint>
#include <cstring>

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

void* option_value(std::uintptr_t value) { return reinterpret_cast<void*>(value); }

class DriverLinkSession final : public LinkSession {
 public:
  explicit DriverLinkSession(const Arch& arch)
      : info_(log_capacity, '\0'), error_(log_capacity, '\0') {
    const DriverApi& api = driver();
    ensure_context();
    values_ = {info_.data(),  option_value(log_capacity),
               error_.data(), option_value(log_capacity),
               option_value(1), option_value(static_cast<std::uintptr_t>(jit_target(arch)))};
    const CUresult result = api.cuLinkCreate(static_cast<unsigned>(options_.size()),
                                             options_.data(), values_.data(), &state_);
    if (result != CUDA_SUCCESS) {
      state_ = nullptr;
      throw CudaError("driver linker (cuLinkCreate)", result,
                      "creating a link for " + arch.sm() + " failed: " + describe(result),
                      text(error_));
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
    void* image = nullptr;
    std::size_t size = 0;
    const CUresult result = driver().cuLinkComplete(state_, &image, &size);
    if (result == CUDA_SUCCESS) {
      // The image belongs to the link state: copy it before the state goes.
      cubin_.assign(static_cast<const char*>(image), size);
    }
    return status("cuLinkComplete", result);
  }

  std::string info_log() const override { return text(info_); }
  std::string error_log() const override { return text(error_); }
  StepStatus cubin(Bytes& image) const override {
    if (cubin_.empty()) return {false, "cuLinkComplete", "an empty image"};
    image = cubin_;
    return {};
  }
  std::string backend_name() const override { return "driver linker (cuLink*)"; }

 private:
  static StepStatus status(const char* call, CUresult result) {
    return StepStatus{result == CUDA_SUCCESS, call, describe(result)};
  }
  static std::string text(const std::string& buffer) {
    return std::string(buffer.c_str(), strnlen(buffer.c_str(), buffer.size()));
  }

  // The driver keeps pointers to the option arrays and writes the used log sizes back into
  // values_ on later cuLink* calls: both must live as long as the link state.
  std::array<CUjit_option, 6> options_{CU_JIT_INFO_LOG_BUFFER,  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                       CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                                       CU_JIT_LOG_VERBOSE,      CU_JIT_TARGET};
  std::array<void*, 6> values_{};
  std::string info_;
  std::string error_;
  CUlinkState state_ = nullptr;
  std::deque<std::string> names_;
  Bytes cubin_;
};

}  // namespace

std::unique_ptr<LinkSession> open_driver_session(const Arch& arch) {
  return std::make_unique<DriverLinkSession>(arch);
}

}  // namespace cujit::detail
