#pragma once
// LinkableCode: the one artefact of the pipeline (source, PTX, LTO-IR -> compile ->
// LinkableCode -> link -> cubin LinkableCode -> load): format, bytes, a name for messages,
// whether it needs the NRT device runtime, and the lowered names of the compiles it came
// from. Built only through factories that check the bytes, so a
// LinkableCode that exists is structurally sound for its format.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "cujit/format.hpp"

namespace cujit {

// Raw bytes. std::string is used as the byte container: cheap to build from literals and
// files, and every consumer API takes (pointer, size).
using Bytes = std::string;

class LinkableCode {
 public:
  static LinkableCode ptx(std::string text, std::string name);
  static LinkableCode cuda_source(std::string source, std::string name);
  static LinkableCode ltoir(Bytes bytes, std::string name);
  static LinkableCode cubin(Bytes bytes, std::string name);
  static LinkableCode fatbin(Bytes bytes, std::string name);
  static LinkableCode object(Bytes bytes, std::string name);
  static LinkableCode archive(Bytes bytes, std::string name);
  // Any format, checked: the bytes must look like `format` and be intact.
  static LinkableCode from_bytes(Format format, Bytes bytes, std::string name);
  // Format from the extension, then checked against the content. The name is the path.
  // Only a regular file of at most max_file_bytes is read (opened without blocking, sized
  // first); anything else is Error(io) naming the path and what it is.
  static LinkableCode from_path(const std::filesystem::path& path);
  static constexpr std::uint64_t max_file_bytes = std::uint64_t{1} << 30;

  Format format() const noexcept { return format_; }
  const Bytes& bytes() const noexcept { return bytes_; }
  const std::string& name() const noexcept { return name_; }

  // True when this code calls into the NRT device runtime, which cujit cannot detect
  // itself (external PTX / LTO-IR / C++ are not scanned).
  bool nrt() const noexcept { return nrt_; }
  LinkableCode& set_nrt(bool needs_nrt) & noexcept {
    nrt_ = needs_nrt;
    return *this;
  }
  LinkableCode&& set_nrt(bool needs_nrt) && noexcept {
    nrt_ = needs_nrt;
    return std::move(*this);
  }

  // Name expression -> lowered (mangled) symbol, from the NVRTC compiles this code came
  // from (a link carries those of all its inputs).
  const std::map<std::string, std::string>& lowered_names() const noexcept { return lowered_; }
  LinkableCode& set_lowered_names(std::map<std::string, std::string> names) & {
    lowered_ = std::move(names);
    return *this;
  }
  LinkableCode&& set_lowered_names(std::map<std::string, std::string> names) && {
    lowered_ = std::move(names);
    return std::move(*this);
  }

 private:
  LinkableCode(Format format, Bytes bytes, std::string name)
      : format_(format), bytes_(std::move(bytes)), name_(std::move(name)) {}

  Format format_;
  Bytes bytes_;
  std::string name_;
  bool nrt_ = false;
  std::map<std::string, std::string> lowered_;
};

}  // namespace cujit
