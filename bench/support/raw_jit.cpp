#include "support/raw_jit.hpp"

#include <nvJitLink.h>
#include <nvrtc.h>

#include <stdexcept>

namespace cujit::bench {

std::string raw_nvrtc(const std::string& source, const std::string& name,
                      const std::vector<std::string>& options, const std::string& target,
                      const std::vector<RawHeader>& headers) {
  std::vector<const char*> header_names;
  std::vector<const char*> header_contents;
  for (const auto& [header_name, content] : headers) {
    header_names.push_back(header_name.c_str());
    header_contents.push_back(content.c_str());
  }
  nvrtcProgram program = nullptr;
  if (nvrtcCreateProgram(&program, source.c_str(), name.c_str(), static_cast<int>(headers.size()),
                         header_contents.data(), header_names.data()) != NVRTC_SUCCESS) {
    throw std::runtime_error("raw nvrtcCreateProgram failed");
  }
  std::vector<const char*> pointers;
  for (const std::string& option : options) pointers.push_back(option.c_str());
  const nvrtcResult result =
      nvrtcCompileProgram(program, static_cast<int>(pointers.size()), pointers.data());
  std::string out;
  if (result == NVRTC_SUCCESS) {
    std::size_t size = 0;
    if (target == "ptx") {
      nvrtcGetPTXSize(program, &size);
      out.resize(size);
      nvrtcGetPTX(program, out.data());
      // PTX is a C string: the size counts its terminator, which the text does not include
      // (cujit returns the text).
      if (!out.empty() && out.back() == '\0') out.pop_back();
    } else if (target == "ltoir") {
      nvrtcGetLTOIRSize(program, &size);
      out.resize(size);
      nvrtcGetLTOIR(program, out.data());
    } else {
      nvrtcGetCUBINSize(program, &size);
      out.resize(size);
      nvrtcGetCUBIN(program, out.data());
    }
  }
  nvrtcDestroyProgram(&program);
  if (result != NVRTC_SUCCESS) throw std::runtime_error("raw nvrtcCompileProgram failed for " + name);
  return out;
}

std::string raw_nvjitlink(const std::vector<RawInput>& inputs, const std::vector<std::string>& options,
                          std::string* info_log) {
  std::vector<const char*> pointers;
  for (const std::string& option : options) pointers.push_back(option.c_str());
  nvJitLinkHandle handle = nullptr;
  if (nvJitLinkCreate(&handle, static_cast<unsigned>(pointers.size()), pointers.data()) != NVJITLINK_SUCCESS) {
    throw std::runtime_error("raw nvJitLinkCreate failed");
  }
  bool ok = true;
  for (const auto& [type, bytes] : inputs) {
    ok = ok && nvJitLinkAddData(handle, static_cast<nvJitLinkInputType>(type), bytes.data(),
                                bytes.size(), "input") == NVJITLINK_SUCCESS;
  }
  ok = ok && nvJitLinkComplete(handle) == NVJITLINK_SUCCESS;
  std::string cubin;
  if (ok) {
    std::size_t size = 0;
    nvJitLinkGetLinkedCubinSize(handle, &size);
    cubin.resize(size);
    nvJitLinkGetLinkedCubin(handle, cubin.data());
  }
  if (info_log != nullptr) {
    std::size_t size = 0;
    info_log->clear();
    if (nvJitLinkGetInfoLogSize(handle, &size) == NVJITLINK_SUCCESS && size > 0) {
      info_log->resize(size);
      if (nvJitLinkGetInfoLog(handle, info_log->data()) != NVJITLINK_SUCCESS) info_log->clear();
    }
    while (!info_log->empty() && info_log->back() == '\0') info_log->pop_back();  // the size counts the terminator
  }
  nvJitLinkDestroy(&handle);
  if (!ok) throw std::runtime_error("raw nvJitLink link failed");
  return cubin;
}

}  // namespace cujit::bench
