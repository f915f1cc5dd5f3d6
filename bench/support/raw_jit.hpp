#pragma once
// The raw-API floors: the same work as cujit, written directly against NVRTC and
// nvJitLink with no cujit code in between (no validation, no logs kept, no cache).

#include <string>
#include <utility>
#include <vector>

namespace cujit::bench {

// An in-memory header for nvrtcCreateProgram: name as included, content.
using RawHeader = std::pair<std::string, std::string>;

// nvrtcCreateProgram + nvrtcCompileProgram + get output; target "ptx", "ltoir" or "cubin".
std::string raw_nvrtc(const std::string& source, const std::string& name,
                      const std::vector<std::string>& options, const std::string& target,
                      const std::vector<RawHeader>& headers = {});

// One input for raw_nvjitlink: nvJitLinkInputType and bytes.
using RawInput = std::pair<int, std::string>;

// nvJitLinkCreate + AddData for each input + Complete + GetLinkedCubin. With `info_log`,
// also the info log (read after the link, outside what a floor's caller times anyway).
std::string raw_nvjitlink(const std::vector<RawInput>& inputs, const std::vector<std::string>& options,
                          std::string* info_log = nullptr);

}  // namespace cujit::bench
