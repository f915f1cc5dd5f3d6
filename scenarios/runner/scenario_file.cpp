// The scenario file's schema: JSON in, a typed Scenario out, every defect a
// ScenarioFileError naming the file and the field's JSON path ("steps[1].options.lto").
// Every field is checked for its JSON type and its range before it is converted (nothing
// here calls json::get on a value it has not checked), and unknown fields are refused. The
// checks run in the order the format lists the fields, so a file with several defects
// reports the first of them.
#include "runner/scenario_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>

#include "support/file_io.hpp"

namespace cujit::scenarios {

void fail_scenario_file(const std::filesystem::path& file, const std::string& what) {
  throw ScenarioFileError(file, what);
}

bool Scenario::needs_device() const noexcept {
  return launch.has_value() || builder == Builder::module || backend == BackendChoice::driver;
}

bool Scenario::uses_device() const noexcept {
  return needs_device() || backend == BackendChoice::both;
}

std::vector<LinkerBackend> Scenario::backends_runnable(bool device) const {
  std::vector<LinkerBackend> out = backends();
  if (!device) std::erase(out, LinkerBackend::driver);
  return out;
}

std::vector<LinkerBackend> Scenario::backends() const {
  std::vector<LinkerBackend> out;
  if (backend != BackendChoice::driver) out.push_back(LinkerBackend::nvjitlink);
  if (backend != BackendChoice::nvjitlink) out.push_back(LinkerBackend::driver);
  return out;
}

std::filesystem::path committed_fixture_sources() {
#ifdef CUJIT_SCENARIO_FIXTURE_SOURCES
  return CUJIT_SCENARIO_FIXTURE_SOURCES;
#else
  return {};
#endif
}

std::vector<std::filesystem::path> scenario_path_from_environment() {
  std::vector<std::filesystem::path> dirs;
  const char* value = std::getenv("CUJIT_SCENARIO_PATH");
  if (value == nullptr) return dirs;
  const std::string text = value;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(':', start), text.size());
    if (end > start) dirs.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return dirs;
}

std::vector<std::filesystem::path> scenario_set_roots(const std::filesystem::path& scenario_dir) {
  std::vector<std::filesystem::path> roots;
  std::error_code error;
  const std::filesystem::path dir = std::filesystem::canonical(scenario_dir, error);
  if (error || !dir.has_parent_path() || dir == dir.root_path()) return roots;
  for (const char* name : {"fixtures", "replays"}) {
    const std::filesystem::path root = dir.parent_path() / name;
    // symlink_status: a "fixtures" that is a symlink could lead anywhere; it is not the set.
    if (std::filesystem::symlink_status(root, error).type() == std::filesystem::file_type::directory) {
      roots.push_back(root);
    }
  }
  return roots;
}

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr int schema_version = 1;

// The error kinds a scenario may expect, by the names Error's to_string gives them.
constexpr std::array error_kinds{ErrorKind::compile, ErrorKind::link,  ErrorKind::format,
                                 ErrorKind::unsupported, ErrorKind::cuda, ErrorKind::nrt,
                                 ErrorKind::cache,   ErrorKind::usage, ErrorKind::io};

// Text from the file, quoted and escaped as JSON (control characters, invalid UTF-8) and
// cut short, so that a message never carries raw bytes of the file.
std::string quote(std::string_view text, std::size_t shown = 60) {
  std::string out = json(std::string(text.substr(0, shown))).dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > shown) out.insert(out.size() - 1, "...");
  return out;
}

// What a value is, for "must be X, not Y".
std::string describe(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "the number " + value.dump();
    case json::value_t::string: return "the string " + quote(value.get_ref<const std::string&>());
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "a value of another kind";
  }
}

// A field's key as a step of a JSON path: ".lto", or ["odd key"] when it is not a plain name.
std::string path_step(std::string_view key) {
  const bool plain = !key.empty() && key.size() <= 60 &&
                     key.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
                         std::string_view::npos;
  return plain ? "." + std::string(key) : "[" + quote(key) + "]";
}

std::string join(std::initializer_list<const char*> names) {
  std::string out;
  for (const char* name : names) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

// A JSON value and where it is in the file. Every accessor checks the type (and range)
// first and fails naming the file and the path.
class Field {
 public:
  Field(const fs::path& file, const json& value, std::string where)
      : file_(&file), value_(&value), where_(std::move(where)) {}

  const std::string& where() const noexcept { return where_; }
  const fs::path& file() const noexcept { return *file_; }
  const json& value() const noexcept { return *value_; }

  [[noreturn]] void fail(const std::string& what) const {
    fail_scenario_file(*file_, (where_.empty() ? std::string("the top level") : where_) + " " + what);
  }
  [[noreturn]] void wrong_type(const std::string& wanted) const {
    fail("must be " + wanted + ", not " + describe(*value_));
  }

  // An object whose fields all appear in `known`.
  void object(std::initializer_list<const char*> known) const {
    if (!value_->is_object()) wrong_type("an object");
    for (const auto& item : value_->items()) {
      bool found = false;
      for (const char* name : known) found = found || item.key() == name;
      if (!found) {
        fail_scenario_file(*file_, "unknown field " + child_where(item.key()) + " (the fields here are " +
                                       join(known) + "; see docs/scenario-format.md)");
      }
    }
  }
  bool has(const char* key) const { return value_->contains(key); }
  Field at(const char* key) const {
    if (!has(key)) fail_scenario_file(*file_, child_where(key) + " is missing");
    return Field(*file_, (*value_)[key], child_where(key));
  }
  std::optional<Field> find(const char* key) const {
    if (!has(key)) return std::nullopt;
    return at(key);
  }

  std::vector<Field> array() const {
    if (!value_->is_array()) wrong_type("an array");
    std::vector<Field> items;
    for (std::size_t i = 0; i < value_->size(); ++i) {
      items.emplace_back(*file_, (*value_)[i], where_ + "[" + std::to_string(i) + "]");
    }
    return items;
  }

  std::string string() const {
    if (!value_->is_string()) wrong_type("a string");
    return value_->get<std::string>();
  }
  std::string non_empty_string() const {
    std::string text = string();
    if (text.empty()) fail("must not be empty");
    return text;
  }
  bool boolean() const {
    if (!value_->is_boolean()) wrong_type("true or false");
    return value_->get<bool>();
  }
  // An integer (not 1.0, not 1e3) from min to max.
  std::int64_t integer(std::int64_t min, std::int64_t max) const {
    const std::string range = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
    if (!value_->is_number_integer()) wrong_type(range);
    if (value_->is_number_unsigned()) {
      const auto value = value_->get<std::uint64_t>();
      if (max < 0 || value > static_cast<std::uint64_t>(max)) wrong_type(range);
      return static_cast<std::int64_t>(value);
    }
    const auto value = value_->get<std::int64_t>();
    if (value < min || value > max) wrong_type(range);
    return value;
  }
  std::uint64_t unsigned_integer(std::uint64_t min, std::uint64_t max) const {
    const std::string range = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
    if (!value_->is_number_unsigned()) wrong_type(range);
    const auto value = value_->get<std::uint64_t>();
    if (value < min || value > max) wrong_type(range);
    return value;
  }
  // Any finite number no larger in magnitude than `limit`.
  double number(double limit = std::numeric_limits<double>::max()) const {
    if (!value_->is_number()) wrong_type("a number");
    const double value = value_->get<double>();
    if (!std::isfinite(value) || std::fabs(value) > limit) {
      wrong_type(limit < std::numeric_limits<double>::max() ? "a number of magnitude at most " + json(limit).dump()
                                                            : std::string("a finite number"));
    }
    return value;
  }
  // One of `choices`.
  std::string one_of(std::initializer_list<const char*> choices) const {
    const std::string text = value_->is_string() ? value_->get<std::string>() : std::string();
    for (const char* choice : choices) {
      if (value_->is_string() && text == choice) return text;
    }
    wrong_type("one of " + join(choices));
  }

 private:
  std::string child_where(std::string_view key) const {
    const std::string step = path_step(key);
    return where_.empty() && step.front() == '.' ? step.substr(1) : where_ + step;
  }

  const fs::path* file_;
  const json* value_;
  std::string where_;
};

// ---- reading the file ----------------------------------------------------------------------

std::string read_text(const fs::path& path) {
  try {
    return detail::read_file(path, "scenario file", max_scenario_file_bytes);
  } catch (const Error& error) {
    fail_scenario_file(path, "cannot be read: " + error.message());
  }
}

// Parses the text, refusing a field that appears twice in one object (JSON keeps the last
// silently, so the first would be ignored).
json parse(const fs::path& path, const std::string& text) {
  std::vector<std::set<std::string>> open;  // the keys of every object being parsed
  const json::parser_callback_t callback = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open.emplace_back();
    } else if (event == json::parse_event_t::object_end && !open.empty()) {
      open.pop_back();
    } else if (event == json::parse_event_t::key && !open.empty() && parsed.is_string() &&
               !open.back().insert(parsed.get<std::string>()).second) {
      fail_scenario_file(path, "is not valid: the field " + quote(parsed.get<std::string>()) +
                                   " appears twice in one object");
    }
    return true;
  };
  try {
    return json::parse(text, callback);
  } catch (const json::exception& error) {
    // parse_error, and also out_of_range for a number no double holds (found by
    // fuzz_scenario: "33...E3333" used to terminate the process).
    fail_scenario_file(path, std::string("is not valid JSON: ") + error.what());
  }
}

// ---- where inputs may be ----------------------------------------------------------------

// `path` with every symlink and ".." resolved as far as it exists.
std::optional<fs::path> resolved(const fs::path& path) {
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error);
  if (error) return std::nullopt;
  fs::path real = fs::weakly_canonical(absolute, error);
  if (error) return std::nullopt;
  return real;
}

bool inside(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (const fs::path& part : root) {
    if (part.empty()) continue;  // a trailing separator
    if (p == path.end() || *p != part) return false;
    ++p;
  }
  return true;
}

// Throws naming `field` (which holds `shown`) unless `path`, resolved, lies inside one of
// `roots`.
void check_confined(const fs::path& scenario_file, const std::string& field, const std::string& shown,
                    const fs::path& path, const std::vector<fs::path>& roots, const std::string& allowed) {
  constexpr std::size_t path_chars = 400;
  const std::optional<fs::path> real = resolved(path);
  if (!real) fail_scenario_file(scenario_file, field + " " + quote(shown, path_chars) + " cannot be resolved");
  for (const fs::path& root : roots) {
    if (inside(*real, root)) return;
  }
  fail_scenario_file(scenario_file, field + " " + quote(shown, path_chars) + " leads outside " + allowed + " (to " +
                                        quote(real->string(), path_chars) +
                                        "); only a scenario one trusts may do that: "
                                        "LoadOptions::allow_paths_outside");
}

const std::string outside_paths = "the scenario file's directory and the fixture set";

bool has_nul(const std::string& text) { return text.find('\0') != std::string::npos; }

// ---- options, expectations, steps ------------------------------------------------------

void apply_options(const Field& object, StepOptions& options) {
  object.object({"arch", "lto", "debug", "lineinfo", "max_registers", "optimization_level", "ftz", "prec_div",
                 "prec_sqrt", "fma", "nrt", "nrt_global"});
  if (auto f = object.find("arch")) options.arch = f->non_empty_string();
  if (auto f = object.find("lto")) options.lto = f->boolean();
  if (auto f = object.find("debug")) options.debug = f->boolean();
  if (auto f = object.find("lineinfo")) options.lineinfo = f->boolean();
  if (auto f = object.find("max_registers")) options.max_registers = static_cast<unsigned>(f->unsigned_integer(1, 255));
  if (auto f = object.find("optimization_level")) {
    options.optimization_level = static_cast<unsigned>(f->unsigned_integer(0, 3));
  }
  if (auto f = object.find("ftz")) options.ftz = f->boolean();
  if (auto f = object.find("prec_div")) options.prec_div = f->boolean();
  if (auto f = object.find("prec_sqrt")) options.prec_sqrt = f->boolean();
  if (auto f = object.find("fma")) options.fma = f->boolean();
  if (auto f = object.find("nrt")) {
    if (f->value().is_null()) options.nrt = std::nullopt;
    else if (f->value().is_boolean()) options.nrt = f->boolean();
    else f->wrong_type("true, false or null");
  }
  if (auto f = object.find("nrt_global")) options.nrt_global = f->boolean();
}

std::optional<ErrorKind> read_error_kind(const Field& object) {
  const auto field = object.find("kind");
  if (!field) return std::nullopt;
  std::string known;
  for (ErrorKind kind : error_kinds) known += (known.empty() ? "" : ", ") + std::string(to_string(kind));
  if (!field->value().is_string()) field->wrong_type("one of " + known);
  const std::string name = field->string();
  for (ErrorKind kind : error_kinds) {
    if (to_string(kind) == name) return kind;
  }
  field->wrong_type("one of " + known);
}

std::string read_message(const Field& object) {
  const auto field = object.find("message");
  return field ? field->string() : std::string();
}

ErrorMatch read_error_match(const Field& object) {
  object.object({"kind", "message"});
  return ErrorMatch{read_error_kind(object), read_message(object)};
}

Expectation read_expectation(const Field& object) {
  object.object({"outcome", "kind", "message", "cubin_sm"});
  Expectation e;
  e.success = object.at("outcome").one_of({"success", "error"}) == "success";
  e.error = ErrorMatch{read_error_kind(object), read_message(object)};
  if (auto f = object.find("cubin_sm")) e.cubin_sm = static_cast<int>(f->integer(0, std::numeric_limits<int>::max()));
  return e;
}

std::vector<Step> read_steps(const Field& doc) {
  StepOptions base;
  if (auto f = doc.find("options")) apply_options(*f, base);
  std::vector<Step> steps;
  if (!doc.has("steps")) {
    steps.push_back({base, read_expectation(doc.at("expect"))});
    return steps;
  }
  if (doc.has("expect")) {
    doc.at("expect").fail("cannot be given with 'steps': each step has its own 'expect'");
  }
  const std::vector<Field> entries = doc.at("steps").array();
  if (entries.empty()) doc.at("steps").fail("must not be empty");
  for (const Field& step : entries) {
    step.object({"options", "expect"});
    Step s{base, {}};
    if (auto f = step.find("options")) apply_options(*f, s.options);
    s.expect = read_expectation(step.at("expect"));
    steps.push_back(std::move(s));
  }
  return steps;
}

// ---- inputs ------------------------------------------------------------------------------

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string hex_bytes(const Field& field) {
  const std::string hex = field.string();
  if (hex.size() % 2 != 0) field.fail("must be hex digits in pairs, not " + quote(hex) + " (an odd length)");
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int high = hex_digit(hex[i]), low = hex_digit(hex[i + 1]);
    if (high < 0 || low < 0) field.fail("must be hex digits in pairs, not " + quote(hex));
    out += static_cast<char>(high * 16 + low);
  }
  return out;
}

std::vector<Patch> read_patches(const Field& value) {
  std::vector<Patch> patches;
  for (const Field& patch : value.array()) {
    patch.object({"offset", "hex"});
    const auto offset = patch.at("offset").unsigned_integer(0, max_input_file_bytes);
    patches.push_back({static_cast<std::size_t>(offset), hex_bytes(patch.at("hex"))});
  }
  return patches;
}

Signature read_signature(const Field& field) {
  try {
    return Signature::parse(field.string());
  } catch (const Error& error) {
    field.fail("is not a signature: " + error.message());
  }
}

Declaration read_declaration(const Field& spec) {
  spec.object({"name", "module", "signature", "abi", "abi_name"});
  Declaration d;
  d.name = spec.at("name").non_empty_string();
  if (auto f = spec.find("module")) d.module = f->non_empty_string();
  d.signature = read_signature(spec.at("signature"));
  if (auto f = spec.find("abi")) d.abi = f->one_of({"c", "numba"}) == "c" ? abi::Abi::c : abi::Abi::numba;
  if (auto f = spec.find("abi_name")) d.abi_name = f->non_empty_string();
  return d;
}

InputAbi read_abi(const Field& spec) {
  spec.object({"name", "signature", "params", "body", "abi", "abi_name", "output"});
  InputAbi abi;
  abi.name = spec.at("name").non_empty_string();
  abi.signature = read_signature(spec.at("signature"));
  if (auto f = spec.find("params")) {
    for (const Field& param : f->array()) abi.params.push_back(param.string());
  }
  if (auto f = spec.find("body")) abi.body = f->string();
  if (auto f = spec.find("abi")) {
    try {
      abi.abi = abi::parse_abi(f->string());
    } catch (const Error& error) {
      f->fail("is not an ABI: " + error.message());
    }
  }
  if (auto f = spec.find("abi_name")) abi.abi_name = f->string();
  if (auto f = spec.find("output")) abi.output = f->one_of({"ptx", "ltoir"}) == "ptx" ? CompileTarget::ptx : CompileTarget::ltoir;
  return abi;
}

// A fixture's name: a relative path inside the fixture directory.
std::string fixture_name(const Field& field) {
  const std::string name = field.non_empty_string();
  const fs::path path(name);
  if (has_nul(name)) field.fail("must not contain a NUL character");
  if (path.is_absolute() || path.has_root_path()) field.fail("must be a name in the fixture directory, not the absolute path " + quote(name));
  for (const fs::path& part : path) {
    if (part == "..") field.fail("must be a name in the fixture directory, not " + quote(name) + " (with '..')");
  }
  return name;
}

// A "path" input, resolved against the scenario file's directory and checked now (and
// again when it runs, input_file_path).
fs::path input_path(const Field& field, const fs::path& scenario_dir, const Scenario& scenario) {
  const std::string text = field.non_empty_string();
  if (has_nul(text)) field.fail("must not contain a NUL character");
  const fs::path path(text);
  if (scenario.allow_paths_outside) return scenario_dir / path;
  if (path.is_absolute() || path.has_root_path()) {
    field.fail("must be relative to the scenario file, not the absolute path " + quote(text) +
               "; only a scenario one trusts may name any file: LoadOptions::allow_paths_outside");
  }
  const fs::path full = scenario_dir / path;
  check_confined(field.file(), field.where(), text, full, scenario.input_roots, outside_paths);
  return full;
}

Input read_input(const Field& entry, const fs::path& scenario_dir, const Scenario& scenario) {
  entry.object({"path", "fixture", "inline", "abi", "format", "name", "nrt", "origin", "role", "patch", "declares"});
  const int sources = int(entry.has("path")) + int(entry.has("fixture")) + int(entry.has("inline")) +
                      int(entry.has("abi"));
  if (sources != 1) entry.fail("needs exactly one of 'path', 'fixture', 'inline', 'abi'");
  Input input;
  input.field = entry.where();
  if (auto f = entry.find("nrt")) input.nrt = f->boolean();
  if (auto f = entry.find("role")) input.kernel_source = f->one_of({"link", "source"}) == "source";
  if (auto f = entry.find("declares")) {
    if (scenario.builder != Builder::kernel && scenario.builder != Builder::reduce) {
      f->fail("applies to the kernel and reduce builders only");
    }
    if (input.kernel_source) f->fail("cannot be given with \"role\": \"source\" (a kernel's own code declares nothing)");
    input.declares = read_declaration(*f);
  }
  if (entry.has("abi")) {
    for (const char* key : {"format", "name", "origin", "patch"}) {
      if (entry.has(key)) entry.at(key).fail("does not apply to an 'abi' input (it is compiled, not read)");
    }
    input.source = read_abi(entry.at("abi"));
    return input;
  }
  if (entry.has("path")) {
    input.source = InputFile{input_path(entry.at("path"), scenario_dir, scenario)};
  } else if (entry.has("fixture")) {
    input.source = InputFixture{fixture_name(entry.at("fixture"))};
  } else {
    input.source = InputInline{entry.at("inline").string()};
  }
  if (auto f = entry.find("format")) {
    const std::string name = f->string();
    input.format = parse_format(name);
    if (!input.format) f->fail("is not a format: " + quote(name));
  }
  if (auto f = entry.find("patch")) input.patches = read_patches(*f);
  if (auto f = entry.find("name")) input.name = f->string();
  const bool is_inline = std::holds_alternative<InputInline>(input.source);
  // Inline text and patched bytes can only be added as data.
  input.origin = is_inline || !input.patches.empty() ? Origin::bytes : Origin::file;
  if (auto f = entry.find("origin")) {
    if (f->one_of({"file", "bytes"}) == "bytes") input.origin = Origin::bytes;
    else if (input.origin == Origin::bytes) f->fail("cannot be 'file' for inline text or patched bytes");
  }
  if (input.origin == Origin::bytes && !input.format) {
    fail_scenario_file(entry.file(), entry.where() + ".format is missing: an input added as bytes needs one");
  }
  return input;
}

std::vector<Input> read_inputs(const Field& doc, const fs::path& scenario_dir, const Scenario& scenario) {
  const Field field = doc.at("inputs");
  const std::vector<Field> entries = field.array();
  if (entries.empty()) field.fail("must not be empty");
  std::vector<Input> inputs;
  for (const Field& entry : entries) inputs.push_back(read_input(entry, scenario_dir, scenario));
  return inputs;
}

// ---- replays ------------------------------------------------------------------------------

// An outcome word a replay prints: lower-case letters, digits and '-', at most 40.
std::string outcome_word(const Field& field) {
  const std::string text = field.non_empty_string();
  const bool word = text.size() <= 40 && std::all_of(text.begin(), text.end(), [](char c) {
                      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
                    });
  if (!word) field.fail("must be an outcome word (a-z, 0-9 and '-', at most 40), not " + quote(text));
  return text;
}

std::vector<Replay> read_replays(const Field& field, const fs::path& scenario_dir, const Scenario& scenario) {
  std::vector<Replay> replays;
  for (const Field& entry : field.array()) {
    // {"stack", "does_not_apply": WHY} says the stack cannot express the case; else a program.
    const bool inapplicable = entry.has("does_not_apply");
    if (inapplicable) {
      entry.object({"stack", "does_not_apply"});
    } else {
      entry.object({"stack", "program", "reported_outcome", "fixed_outcome"});
    }
    Replay replay;
    replay.field = entry.where();
    replay.stack = entry.at("stack").one_of({"numba-cuda", "cuda.core", "cupy"});
    for (const Replay& other : replays) {
      if (other.stack == replay.stack) entry.at("stack").fail("names " + quote(replay.stack) + " a second time");
    }
    if (inapplicable) {
      replay.does_not_apply = entry.at("does_not_apply").non_empty_string();
      replays.push_back(std::move(replay));
      continue;
    }
    replay.program = input_path(entry.at("program"), scenario_dir, scenario);
    if (replay.program.extension() != ".py") entry.at("program").fail("must name a Python file (.py)");
    replay.reported_outcome = outcome_word(entry.at("reported_outcome"));
    replay.fixed_outcome = outcome_word(entry.at("fixed_outcome"));
    if (replay.fixed_outcome == replay.reported_outcome) {
      entry.at("fixed_outcome").fail("must differ from reported_outcome, or no run could tell them apart");
    }
    replays.push_back(std::move(replay));
  }
  return replays;
}

// ---- launch ------------------------------------------------------------------------------

Dim3 read_dim(const Field& launch, const char* key) {
  Dim3 d;
  const auto field = launch.find(key);
  if (!field) return d;
  const std::vector<Field> values = field->array();
  if (values.empty() || values.size() > 3) field->fail("must hold 1 to 3 numbers, not " + std::to_string(values.size()));
  const auto dim = [&](std::size_t i) {
    return static_cast<unsigned>(values[i].unsigned_integer(1, std::numeric_limits<std::uint32_t>::max()));
  };
  d.x = dim(0);
  if (values.size() > 1) d.y = dim(1);
  if (values.size() > 2) d.z = dim(2);
  return d;
}

// The types a launch can pass and read back (scenario_run's read_value).
bool readable(const Type& type) {
  return type.pointers == 0 && (type.scalar == Scalar::int32 || type.scalar == Scalar::int64 ||
                                type.scalar == Scalar::uint32 || type.scalar == Scalar::float32 ||
                                type.scalar == Scalar::float64);
}
bool passable(const Type& type) { return readable(type) || (type.pointers == 0 && type.scalar == Scalar::uint64); }

std::optional<Type> parse_type(const std::string& text) {
  try {
    return Type::parse(text);
  } catch (const Error&) {
    return std::nullopt;
  }
}

ArgValue scalar_value(const Field& value, const Type& type) {
  constexpr auto i32 = std::numeric_limits<std::int32_t>::max(), i32_min = std::numeric_limits<std::int32_t>::min();
  constexpr auto i64 = std::numeric_limits<std::int64_t>::max(), i64_min = std::numeric_limits<std::int64_t>::min();
  switch (type.scalar) {
    case Scalar::int32: return arg_value(static_cast<std::int32_t>(value.integer(i32_min, i32)));
    case Scalar::int64: return arg_value(value.integer(i64_min, i64));
    case Scalar::uint32:
      return arg_value(static_cast<std::uint32_t>(value.unsigned_integer(0, std::numeric_limits<std::uint32_t>::max())));
    case Scalar::uint64: return arg_value(value.unsigned_integer(0, std::numeric_limits<std::uint64_t>::max()));
    case Scalar::float32: return arg_value(static_cast<float>(value.number(FLT_MAX)));
    default: return arg_value(value.number());  // float64; passable() admits nothing else
  }
}

LaunchArg read_arg(const Field& arg) {
  if (!arg.value().is_object()) arg.wrong_type(R"(an object: {"output": TYPE, "count": N} or {"TYPE": VALUE})");
  if (arg.has("output")) {
    arg.object({"output", "count"});
    const Field field = arg.at("output");
    const std::optional<Type> type = parse_type(field.string());
    if (!type || !readable(*type)) field.wrong_type("one of int32, int64, uint32, float32, float64");
    OutputArg output{*type, 1};
    if (auto f = arg.find("count")) output.count = f->unsigned_integer(1, max_output_bytes / type->size());
    return output;
  }
  if (arg.value().size() != 1) arg.fail(R"(must be {"output": TYPE, "count": N} or one {"TYPE": VALUE})");
  const std::string name = arg.value().begin().key();
  const std::optional<Type> type = parse_type(name);
  if (!type || !passable(*type)) {
    fail_scenario_file(arg.file(), "unknown field " + arg.where() + path_step(name) +
                                       " (a scalar argument's type: int32, int64, uint32, uint64, float32, float64)");
  }
  return ScalarArg{*type, scalar_value(Field(arg.file(), arg.value().begin().value(), arg.where() + path_step(name)), *type)};
}

Launch read_launch(const Field& object) {
  object.object({"kernel", "grid", "block", "args", "expect"});
  Launch launch;
  launch.kernel = object.at("kernel").non_empty_string();
  launch.grid = read_dim(object, "grid");
  launch.block = read_dim(object, "block");
  if (auto f = object.find("args")) {
    for (const Field& arg : f->array()) launch.args.push_back(read_arg(arg));
  }
  if (auto f = object.find("expect")) {
    for (const Field& v : f->array()) launch.expect.push_back({v.number(), v.value().dump()});
  }
  return launch;
}

// ---- the whole file ----------------------------------------------------------------------

Builder read_builder(const Field& doc) {
  const auto field = doc.find("builder");
  if (!field) return Builder::linker;
  const std::string name = field->one_of({"linker", "kernel", "module", "abi", "reduce", "graph"});
  if (name == "kernel") return Builder::kernel;
  if (name == "module") return Builder::module;
  if (name == "abi") return Builder::abi;
  if (name == "reduce") return Builder::reduce;
  if (name == "graph") return Builder::graph;
  return Builder::linker;
}

BackendChoice read_backend(const Field& doc) {
  const auto field = doc.find("backend");
  if (!field) return BackendChoice::nvjitlink;
  const std::string name = field->one_of({"nvjitlink", "driver", "both"});
  return name == "nvjitlink" ? BackendChoice::nvjitlink : name == "driver" ? BackendChoice::driver : BackendChoice::both;
}

std::vector<fs::path> input_roots(const fs::path& scenario_dir, const LoadOptions& options) {
  std::vector<fs::path> roots;
  if (auto dir = resolved(scenario_dir)) roots.push_back(*dir);
  std::vector<fs::path> others = scenario_set_roots(scenario_dir);
  others.insert(others.end(), options.input_roots.begin(), options.input_roots.end());
  for (const fs::path& root : others) {
    std::error_code error;
    if (root.empty() || !fs::is_directory(root, error)) continue;
    if (auto dir = resolved(root)) roots.push_back(*dir);
  }
  return roots;
}

// Where the bug was reported: "owner/repository#N" or an https URL, one line.
std::string read_reported_at(const Field& field) {
  const std::string text = field.non_empty_string();
  const bool url = text.rfind("https://", 0) == 0 && text.size() > 8;
  const auto hash = text.find('#');
  const auto slash = text.find('/');
  const bool issue = hash != std::string::npos && slash != std::string::npos && slash > 0 && slash + 1 < hash &&
                     hash + 1 < text.size() &&
                     text.find_first_not_of("0123456789", hash + 1) == std::string::npos;
  const bool one_line = std::none_of(text.begin(), text.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ' ';
  });
  if (!(url || issue) || !one_line || text.size() > 300) {
    field.fail("must be \"owner/repository#N\" or an https:// URL (one line, at most 300 characters), not " +
               quote(text));
  }
  return text;
}

Type read_type(const Field& field) {
  const std::optional<Type> type = parse_type(field.string());
  if (!type || type->pointers != 0 || type->is_void()) field.wrong_type("a scalar type such as int32 or float64");
  return *type;
}

ReduceSpecFile read_reduce(const Field& object) {
  object.object({"input", "output", "accumulator", "op"});
  ReduceSpecFile spec;
  if (auto f = object.find("input")) spec.input = read_type(*f);
  if (auto f = object.find("output")) spec.output = read_type(*f);
  if (auto f = object.find("accumulator")) spec.accumulator = read_type(*f);
  if (auto f = object.find("op")) spec.op = f->one_of({"sum", "min", "max", "declared"});
  return spec;
}

// What each builder needs of the rest of the file, checked once everything is read.
void check_builder(const Field& doc, const Scenario& scenario) {
  const auto count = [&](auto predicate) {
    return std::count_if(scenario.inputs.begin(), scenario.inputs.end(), predicate);
  };
  const auto declared = count([](const Input& i) { return i.declares.has_value(); });
  const auto abi_inputs = count([](const Input& i) { return std::holds_alternative<InputAbi>(i.source); });
  switch (scenario.builder) {
    case Builder::abi:
      if (abi_inputs == 0) doc.at("inputs").fail("needs an 'abi' input for the abi builder");
      if (scenario.launch) doc.at("launch").fail("does not apply to the abi builder (it compiles, and links nothing)");
      break;
    case Builder::reduce:
      if (!scenario.reduce) fail_scenario_file(doc.file(), "reduce is missing: the reduce builder needs its spec");
      if (scenario.launch) doc.at("launch").fail("does not apply to the reduce builder (it builds the reduction)");
      if ((scenario.reduce->op == "declared") != (declared == 1)) {
        doc.at("reduce").fail("op 'declared' needs exactly one input with 'declares' (the operator), and "
                              "only it may have one");
      }
      break;
    case Builder::graph:
      if (!scenario.launch) fail_scenario_file(doc.file(), "launch is missing: the graph builder launches through a graph");
      break;
    default:
      break;
  }
  if (scenario.reduce && scenario.builder != Builder::reduce) {
    doc.at("reduce").fail("applies to the reduce builder only");
  }
}

Scenario read_scenario(const Field& doc, const LoadOptions& options) {
  if (!doc.value().is_object()) doc.wrong_type("an object");
  // The schema first: a newer file is refused for its schema, not for its new fields.
  const Field schema = doc.at("schema");
  if (!schema.value().is_number_unsigned() || schema.value().get<std::uint64_t>() != schema_version) {
    schema.wrong_type(std::to_string(schema_version));
  }
  doc.object({"schema", "name", "reported", "reported_at", "found_here", "cujit", "builder", "backend", "inputs",
              "options", "launch", "expect", "steps", "reported_failure", "reduce", "replays",
              "driver_does_not_apply"});
  Scenario scenario;
  scenario.file = doc.file();
  scenario.name = doc.at("name").non_empty_string();
  scenario.backend = read_backend(doc);
  scenario.builder = read_builder(doc);
  if (auto f = doc.find("reported")) scenario.reported = f->string();
  if (auto f = doc.find("reported_at")) scenario.reported_at = read_reported_at(*f);
  if (auto f = doc.find("found_here")) scenario.found_here = f->non_empty_string();
  if (doc.has("reported_at") && doc.has("found_here")) {
    doc.at("found_here").fail("and reported_at: a scenario was either reported upstream or found here, not both");
  }
  if (auto f = doc.find("cujit")) scenario.cujit_behaviour = f->string();
  if (auto f = doc.find("driver_does_not_apply")) {
    if (scenario.backend != BackendChoice::nvjitlink) {
      f->fail("in a file that runs the driver backend: say why the driver cannot run the case only where it does not");
    }
    scenario.driver_does_not_apply = f->non_empty_string();
  }
  scenario.steps = read_steps(doc);
  if (auto f = doc.find("reported_failure")) scenario.reported_failure = read_error_match(*f);
  const fs::path scenario_dir = fs::absolute(doc.file()).parent_path();
  scenario.allow_paths_outside = options.allow_paths_outside;
  scenario.input_roots = input_roots(scenario_dir, options);
  scenario.inputs = read_inputs(doc, scenario_dir, scenario);
  if (auto f = doc.find("replays")) scenario.replays = read_replays(*f, scenario_dir, scenario);
  if (auto f = doc.find("launch")) scenario.launch = read_launch(*f);
  if (auto f = doc.find("reduce")) scenario.reduce = read_reduce(*f);
  check_builder(doc, scenario);
  return scenario;
}

}  // namespace

Scenario load_scenario(const fs::path& path, const LoadOptions& options) {
  const json doc = parse(path, read_text(path));
  try {
    return read_scenario(Field(path, doc, ""), options);
  } catch (const json::exception& error) {
    // Not reached: every value is checked before it is converted. Kept so that a slip is
    // still a usage error naming the file, never an escaping json exception.
    fail_scenario_file(path, std::string("is malformed: ") + error.what());
  } catch (const fs::filesystem_error& error) {
    fail_scenario_file(path, std::string("names a path that cannot be examined: ") + error.what());
  }
}

fs::path input_file_path(const Scenario& scenario, const Input& input, const fs::path& fixture_dir) {
  if (const auto* file = std::get_if<InputFile>(&input.source)) {
    if (!scenario.allow_paths_outside) {
      check_confined(scenario.file, input.field + ".path", file->path.string(), file->path, scenario.input_roots,
                     outside_paths);
    }
    return file->path;
  }
  if (const auto* fixture = std::get_if<InputFixture>(&input.source)) {
    const fs::path path = fixture_dir / fixture->name;
    if (!scenario.allow_paths_outside) {
      const std::optional<fs::path> root = resolved(fixture_dir);
      check_confined(scenario.file, input.field + ".fixture", fixture->name, path,
                     root ? std::vector{*root} : std::vector<fs::path>{}, "the fixture directory");
    }
    return path;
  }
  return {};
}

}  // namespace cujit::scenarios
