#pragma once
// LinkableCode: the one artefact of the pipeline (source, PTX, LTO-IR -> compile ->
// LinkableCode -> link -> cubin LinkableCode -> load): format, bytes, a name for messages,
// whether it needs the NRT device runtime, and the lowered names of the compiles it came
// from. Built only through factories that check the bytes, so a
// LinkableCode that exists is structurally sound for its format. The one exception is a
// cubin a vendor linker has just returned (detail::LinkableCodeAccess): its format is
// checked, its structure is the linker's word.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "cujit/format.hpp"

namespace cujit {

namespace detail {
class LinkableCodeAccess;
}  // namespace detail

/// Raw bytes. std::string is used as the byte container: cheap to build from literals and
/// files, and every consumer API takes (pointer, size).
using Bytes = std::string;

/// Device code of one format, with its name, NRT flag and lowered names: what compiles
/// produce and links consume. Built only by the factories, which check the bytes.
class LinkableCode {
 public:
  /// PTX text. \throws Error (format) naming `name` when it is not intact PTX.
  static LinkableCode ptx(std::string text, std::string name);
  /// CUDA C++ source, compiled by NVRTC when linked. \throws Error (format) when it is not text.
  static LinkableCode cuda_source(std::string source, std::string name);
  /// LTO-IR. \throws Error (format) naming `name` when the bytes are not intact LTO-IR.
  static LinkableCode ltoir(Bytes bytes, std::string name);
  /// A cubin (CUDA ELF). \throws Error (format) naming `name` when it is damaged.
  static LinkableCode cubin(Bytes bytes, std::string name);
  /// A fatbin. \throws Error (format) naming `name` when it or an entry is damaged.
  static LinkableCode fatbin(Bytes bytes, std::string name);
  /// A host object with embedded device code. \throws Error (format) when it is damaged or
  /// holds none.
  static LinkableCode object(Bytes bytes, std::string name);
  /// A static archive of such objects. \throws Error (format) when a member is damaged.
  static LinkableCode archive(Bytes bytes, std::string name);
  /// Any format, checked: the bytes must look like `format` and be intact.
  /// \throws Error (format) naming `name` and what is wrong otherwise.
  static LinkableCode from_bytes(Format format, Bytes bytes, std::string name);
  /// Format from the extension, then checked against the content. The name is the path.
  /// Only a regular file of at most max_file_bytes is read (opened without blocking, sized
  /// first); anything else is Error(io) naming the path and what it is.
  static LinkableCode from_path(const std::filesystem::path& path);
  /// The largest file from_path() reads: 1 GiB.
  static constexpr std::uint64_t max_file_bytes = std::uint64_t{1} << 30;

  /// The format the bytes were checked as.
  Format format() const noexcept { return format_; }
  /// The code itself. Copies of a LinkableCode share these bytes (they never change), so
  /// copying one (into a Linker, a Module, a cache result) copies no code.
  const Bytes& bytes() const& noexcept { return bytes_ ? *bytes_ : no_bytes(); }
  /// The code itself, out of a LinkableCode about to go: moved when no copy shares it
  /// (`linker.link().code.bytes()` copies no cubin), copied otherwise.
  Bytes bytes() && {
    if (!bytes_) return {};
    if (bytes_.use_count() == 1) return std::move(*bytes_);
    return *bytes_;
  }
  /// The given name or path, used in every message about this code (may be empty).
  const std::string& name() const noexcept { return name_; }

  /// True when this code calls into the NRT device runtime, which cujit cannot detect
  /// itself (external PTX / LTO-IR / C++ are not scanned).
  bool nrt() const noexcept { return nrt_; }
  /// Marks this code as calling NRT (or not); returns *this.
  LinkableCode& set_nrt(bool needs_nrt) & noexcept {
    nrt_ = needs_nrt;
    return *this;
  }
  /// Marks this code as calling NRT (or not); returns the moved *this.
  LinkableCode&& set_nrt(bool needs_nrt) && noexcept {
    nrt_ = needs_nrt;
    return std::move(*this);
  }

  /// Name expression -> lowered (mangled) symbol, from the NVRTC compiles this code came
  /// from (a link carries those of all its inputs).
  const std::map<std::string, std::string>& lowered_names() const noexcept { return lowered_; }
  /// Replaces the lowered names; returns *this.
  LinkableCode& set_lowered_names(std::map<std::string, std::string> names) & {
    lowered_ = std::move(names);
    return *this;
  }
  /// Replaces the lowered names; returns the moved *this.
  LinkableCode&& set_lowered_names(std::map<std::string, std::string> names) && {
    lowered_ = std::move(names);
    return std::move(*this);
  }

 private:
  friend class detail::LinkableCodeAccess;
  LinkableCode(Format format, Bytes bytes, std::string name)
      : format_(format), bytes_(std::make_shared<Bytes>(std::move(bytes))), name_(std::move(name)) {}
  // What a moved-from LinkableCode reads as.
  static const Bytes& no_bytes() noexcept;

  Format format_;
  // Never null but in a moved-from object; never changed once made (bytes() && takes them
  // only from their sole owner).
  std::shared_ptr<Bytes> bytes_;
  std::string name_;
  bool nrt_ = false;
  std::map<std::string, std::string> lowered_;
};

}  // namespace cujit
