#pragma once
// One link through one backend's API. The Linker drives every session the same way (add
// each input, complete, read logs, build errors); a session only wraps its API's calls.

#include <memory>
#include <string>
#include <vector>

#include "cujit/arch.hpp"
#include "cujit/link_options.hpp"
#include "cujit/linkable_code.hpp"

namespace cujit::detail {

struct StepStatus {
  bool ok = true;
  std::string api_call;  // e.g. "nvJitLinkAddData"
  std::string status;    // e.g. "NVJITLINK_ERROR_PTX_COMPILE"
  // The input was made by a newer toolkit than this linker reads.
  bool input_too_new = false;
};

class LinkSession {
 public:
  virtual ~LinkSession() = default;
  virtual StepStatus add(const LinkableCode& code) = 0;
  virtual StepStatus complete() = 0;
  virtual std::string info_log() const = 0;
  virtual std::string error_log() const = 0;
  // The linked image, after a successful complete(). A failed read, or an empty image, is
  // a failed step: a link never yields an empty cubin as success.
  virtual StepStatus cubin(Bytes& image) const = 0;
  // "nvJitLink" / "driver linker (cuLink*)"
  virtual std::string backend_name() const = 0;
};

// `extra`: the option strings after -arch and -lto (nvjitlink_option_strings).
// Every session hears what nvJitLink prints to stderr during its calls, and a step whose
// printed errors name this session's inputs fails (nvjitlink_session.cpp says why).
std::unique_ptr<LinkSession> open_nvjitlink_session(const Arch& arch, bool lto,
                                                    const std::vector<std::string>& extra);
// `flags` as CU_JIT_* options (driver_jit_options.hpp); checked by check_link_options.
std::unique_ptr<LinkSession> open_driver_session(const Arch& arch, const LinkFlags& flags);

// "13.0", or "unavailable (why)" when nvJitLink cannot be loaded.
std::string nvjitlink_version_string();

}  // namespace cujit::detail
