#include "cujit/linkable_code.hpp"

#include "code/linkable_code_access.hpp"
#include "cujit/error.hpp"
#include "support/file_io.hpp"

namespace cujit {
namespace {

constexpr const char* from_bytes_component = "LinkableCode::from_bytes";
constexpr const char* from_path_component = "LinkableCode::from_path";

void check_bytes(Format format, std::string_view bytes, const std::string& name,
                 const char* component) {
  // nvJitLink prints the input's name in its log; a name of 200,000 characters with an
  // undefined symbol killed nvJitLinkComplete (cujit/format.hpp, max_linker_name_length).
  if (name.size() > max_linker_name_length) {
    throw Error(ErrorKind::format, component,
                "an input name of " + std::to_string(name.size()) + " characters ('" + name.substr(0, 32) +
                    "...') is longer than nvJitLink takes; the limit is " +
                    std::to_string(max_linker_name_length));
  }
  if (bytes.empty()) {
    throw Error(ErrorKind::format, component,
                "'" + name + "' is empty; expected " + std::string(to_string(format)));
  }
  const auto found = detect_format(bytes);
  if (found != format) {
    throw Error(ErrorKind::format, component,
                "'" + name + "' was given as " + std::string(to_string(format)) +
                    " but its content is " +
                    (found ? std::string(to_string(*found)) : std::string("not a known format")));
  }
  if (const std::string problem = integrity_problem(format, bytes); !problem.empty()) {
    throw Error(ErrorKind::format, component,
                "'" + name + "' is not a valid " + std::string(to_string(format)) + ": " +
                    problem);
  }
}

}  // namespace

const Bytes& LinkableCode::no_bytes() noexcept {
  static const Bytes none;
  return none;
}

LinkableCode LinkableCode::from_bytes(Format format, Bytes bytes, std::string name) {
  check_bytes(format, bytes, name, from_bytes_component);
  return LinkableCode(format, std::move(bytes), std::move(name));
}

LinkableCode LinkableCode::ptx(std::string text, std::string name) {
  return from_bytes(Format::ptx, std::move(text), std::move(name));
}
LinkableCode LinkableCode::cuda_source(std::string source, std::string name) {
  return from_bytes(Format::cu, std::move(source), std::move(name));
}
LinkableCode LinkableCode::ltoir(Bytes bytes, std::string name) {
  return from_bytes(Format::ltoir, std::move(bytes), std::move(name));
}
LinkableCode LinkableCode::cubin(Bytes bytes, std::string name) {
  return from_bytes(Format::cubin, std::move(bytes), std::move(name));
}
LinkableCode LinkableCode::fatbin(Bytes bytes, std::string name) {
  return from_bytes(Format::fatbin, std::move(bytes), std::move(name));
}
LinkableCode LinkableCode::object(Bytes bytes, std::string name) {
  return from_bytes(Format::object, std::move(bytes), std::move(name));
}
LinkableCode LinkableCode::archive(Bytes bytes, std::string name) {
  return from_bytes(Format::archive, std::move(bytes), std::move(name));
}

LinkableCode LinkableCode::from_path(const std::filesystem::path& path) {
  const std::string name = path.string();
  const std::string extension = path.extension().string();
  if (extension.empty()) {
    throw Error(ErrorKind::format, from_path_component,
                "'" + name + "' has no extension, so its format is unknown; expected one of " +
                    known_extensions());
  }
  const auto format = format_from_extension(extension);
  if (!format) {
    throw Error(ErrorKind::format, from_path_component,
                "'" + name + "' has the unknown extension '" + extension + "'; expected one of " +
                    known_extensions());
  }
  Bytes bytes = detail::read_file(path, from_path_component, max_file_bytes);
  check_bytes(*format, bytes, name, from_path_component);
  return LinkableCode(*format, std::move(bytes), name);
}

namespace detail {

LinkableCode LinkableCodeAccess::linker_output(Bytes bytes, std::string name) {
  if (detect_format(bytes) != Format::cubin) {
    throw Error(ErrorKind::format, "Linker (reading the linked cubin)",
                "the linker returned " + std::to_string(bytes.size()) + " bytes for '" + name +
                    "' that are not a cubin");
  }
  return LinkableCode(Format::cubin, std::move(bytes), std::move(name));
}

}  // namespace detail
}  // namespace cujit
