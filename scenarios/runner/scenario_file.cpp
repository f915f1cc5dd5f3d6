// The scenario file's schema: JSON in, a typed Scenario out, every defect an
// Error(usage) naming the file and the field. The checks run in the order the format
// lists the fields, so a file with several defects reports the first of them.
#include "runner/scenario_file.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <fstream>
#include <utility>

namespace cujit::scenarios {

void fail_scenario_file(const std::filesystem::path& file, const std::string& what) {
  throw ScenarioFileError(file, what);
}

bool Scenario::needs_device() const noexcept {
  return launch.has_value() || builder == Builder::module || backend != BackendChoice::nvjitlink;
}

std::vector<LinkerBackend> Scenario::backends() const {
  std::vector<LinkerBackend> out;
  if (backend != BackendChoice::driver) out.push_back(LinkerBackend::nvjitlink);
  if (backend != BackendChoice::nvjitlink) out.push_back(LinkerBackend::driver);
  return out;
}

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr int schema_version = 1;

// The error kinds a scenario may expect, by the names Error's to_string gives them.
constexpr std::array error_kinds{ErrorKind::compile, ErrorKind::link,  ErrorKind::format,
                                 ErrorKind::unsupported, ErrorKind::cuda, ErrorKind::nrt,
                                 ErrorKind::cache,   ErrorKind::usage, ErrorKind::io};

class Reader {
 public:
  explicit Reader(fs::path path) : path_(std::move(path)) {}
  [[noreturn]] void fail(const std::string& what) const { fail_scenario_file(path_, what); }

  json load() const {
    std::ifstream in(path_);
    if (!in) fail("cannot be read");
    try {
      return json::parse(in);
    } catch (const json::exception& error) {
      // parse_error, and also out_of_range for a number no double holds (found by
      // fuzz_scenario: "33...E3333" used to terminate the process).
      fail(std::string("is not valid JSON: ") + error.what());
    }
  }

  // The field's value, or `fallback` when it is absent.
  template <class T>
  T get(const json& object, const char* key, const T& fallback) const {
    if (!object.contains(key)) return fallback;
    try {
      return object.at(key).get<T>();
    } catch (const json::exception&) {
      fail(std::string("field '") + key + "' has the wrong type");
    }
  }

  // Parses a type name, naming the field when cujit rejects it.
  Type type(const std::string& field, const std::string& text) const {
    try {
      return Type::parse(text);
    } catch (const Error& error) {
      fail(field + ": " + error.message());
    }
  }

  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// ---- options, expectations, steps ------------------------------------------------------

void apply_options(const Reader& reader, const json& object, StepOptions& options) {
  if (!object.is_object()) reader.fail("'options' must be an object");
  for (const auto& [key, value] : object.items()) {
    if (key == "arch") {
      if (!value.is_string()) reader.fail("option 'arch' has the wrong type");
      options.arch = value.get<std::string>();
    } else if (key == "lto" || key == "debug" || key == "lineinfo" || key == "nrt_global") {
      if (!value.is_boolean()) reader.fail("option '" + key + "' has the wrong type");
      const bool on = value.get<bool>();
      if (key == "lto") options.lto = on;
      else if (key == "debug") options.debug = on;
      else if (key == "lineinfo") options.lineinfo = on;
      else options.nrt_global = on;
    } else if (key == "nrt") {
      if (!value.is_boolean() && !value.is_null()) reader.fail("option 'nrt' has the wrong type");
      options.nrt = value.is_null() ? std::nullopt : std::optional<bool>(value.get<bool>());
    } else {
      reader.fail("unknown option '" + key + "'");
    }
  }
}

std::optional<ErrorKind> read_error_kind(const Reader& reader, const json& object) {
  const std::string name = reader.get<std::string>(object, "kind", "");
  if (name.empty()) return std::nullopt;
  for (ErrorKind kind : error_kinds) {
    if (to_string(kind) == name) return kind;
  }
  std::string known;
  for (ErrorKind kind : error_kinds) known += (known.empty() ? "" : ", ") + std::string(to_string(kind));
  reader.fail("'kind' must be one of " + known + ", not '" + name + "'");
}

ErrorMatch read_error_match(const Reader& reader, const json& object) {
  return ErrorMatch{read_error_kind(reader, object), reader.get<std::string>(object, "message", "")};
}

Expectation read_expectation(const Reader& reader, const json& object) {
  if (!object.is_object()) reader.fail("'expect' must be an object");
  Expectation e;
  const std::string outcome = reader.get<std::string>(object, "outcome", "");
  if (outcome != "success" && outcome != "error") reader.fail("expected 'outcome' to be 'success' or 'error'");
  e.success = outcome == "success";
  e.error = read_error_match(reader, object);
  if (object.contains("cubin_sm")) {
    if (!object["cubin_sm"].is_number_integer()) reader.fail("'cubin_sm' must be an integer");
    e.cubin_sm = object["cubin_sm"].get<int>();
  }
  return e;
}

std::vector<Step> read_steps(const Reader& reader, const json& doc) {
  StepOptions base;
  if (doc.contains("options")) apply_options(reader, doc["options"], base);
  std::vector<Step> steps;
  if (!doc.contains("steps")) {
    if (!doc.contains("expect")) reader.fail("'expect' is missing");
    steps.push_back({base, read_expectation(reader, doc["expect"])});
    return steps;
  }
  if (!doc["steps"].is_array()) reader.fail("'steps' must be an array");
  for (const json& step : doc["steps"]) {
    if (!step.is_object() || !step.contains("expect")) reader.fail("a step needs 'expect'");
    Step s{base, {}};
    if (step.contains("options")) apply_options(reader, step["options"], s.options);
    s.expect = read_expectation(reader, step["expect"]);
    steps.push_back(std::move(s));
  }
  return steps;
}

// ---- inputs ------------------------------------------------------------------------------

std::string hex_bytes(const Reader& reader, const std::string& hex) {
  if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) reader.fail("patch hex is not hex");
  if (hex.size() % 2 != 0) reader.fail("patch hex '" + hex + "' has an odd length");
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

std::vector<Patch> read_patches(const Reader& reader, const json& value) {
  if (!value.is_array()) reader.fail("'patch' must be an array");
  std::vector<Patch> patches;
  for (const json& patch : value) {
    if (!patch.is_object() || !patch.contains("offset") || !patch.contains("hex") ||
        !patch["offset"].is_number_unsigned() || !patch["hex"].is_string()) {
      reader.fail("a patch needs an unsigned 'offset' and a 'hex' string");
    }
    patches.push_back({patch["offset"].get<std::size_t>(), hex_bytes(reader, patch["hex"].get<std::string>())});
  }
  return patches;
}

InputAbi read_abi(const Reader& reader, const json& spec) {
  if (!spec.is_object()) reader.fail("'abi' must be an object");
  InputAbi abi;
  abi.name = reader.get<std::string>(spec, "name", "");
  const std::string signature = reader.get<std::string>(spec, "signature", "");
  try {
    abi.signature = Signature::parse(signature);
  } catch (const Error& error) {
    reader.fail("abi 'signature': " + error.message());
  }
  abi.params = reader.get<std::vector<std::string>>(spec, "params", {});
  abi.body = reader.get<std::string>(spec, "body", "");
  const std::string abi_text = reader.get<std::string>(spec, "abi", "c");
  try {
    abi.abi = abi::parse_abi(abi_text);
  } catch (const Error& error) {
    reader.fail("abi 'abi': " + error.message());
  }
  if (spec.contains("abi_name")) abi.abi_name = reader.get<std::string>(spec, "abi_name", "");
  const std::string output = reader.get<std::string>(spec, "output", "ltoir");
  const auto target = parse_compile_target(output);
  if (!target || *target == CompileTarget::cubin) {
    reader.fail("abi 'output' is '" + output + "'; expected 'ptx' or 'ltoir'");
  }
  abi.output = *target;
  return abi;
}

Input read_input(const Reader& reader, const json& entry) {
  if (!entry.is_object()) reader.fail("an input must be an object");
  const int sources = int(entry.contains("path")) + int(entry.contains("fixture")) +
                      int(entry.contains("inline")) + int(entry.contains("abi"));
  if (sources != 1) reader.fail("an input needs exactly one of 'path', 'fixture', 'inline', 'abi'");
  Input input;
  input.nrt = reader.get<bool>(entry, "nrt", false);
  const std::string role = reader.get<std::string>(entry, "role", "link");
  if (role != "link" && role != "source") reader.fail("'role' must be link or source, not '" + role + "'");
  input.kernel_source = role == "source";
  if (entry.contains("abi")) {
    input.source = read_abi(reader, entry["abi"]);
    return input;
  }
  if (entry.contains("path")) {
    input.source = InputFile{reader.path().parent_path() / reader.get<std::string>(entry, "path", "")};
  } else if (entry.contains("fixture")) {
    input.source = InputFixture{reader.get<std::string>(entry, "fixture", "")};
  } else {
    input.source = InputInline{reader.get<std::string>(entry, "inline", "")};
  }
  const std::string format_name = reader.get<std::string>(entry, "format", "");
  if (entry.contains("format")) {
    input.format = parse_format(format_name);
    if (!input.format) reader.fail("input format '" + format_name + "' is not a format");
  }
  if (entry.contains("patch")) input.patches = read_patches(reader, entry["patch"]);
  if (entry.contains("name")) input.name = reader.get<std::string>(entry, "name", "");
  const bool is_inline = std::holds_alternative<InputInline>(input.source);
  const std::string origin = reader.get<std::string>(entry, "origin", is_inline ? "bytes" : "file");
  if (origin != "file" && origin != "bytes") reader.fail("'origin' must be file or bytes, not '" + origin + "'");
  // Inline text and patched bytes can only be added as data.
  input.origin = origin == "bytes" || is_inline || !input.patches.empty() ? Origin::bytes : Origin::file;
  if (input.origin == Origin::bytes && !input.format) reader.fail("input format '' is not a format");
  return input;
}

std::vector<Input> read_inputs(const Reader& reader, const json& doc) {
  if (!doc.contains("inputs") || !doc["inputs"].is_array() || doc["inputs"].empty()) {
    reader.fail("'inputs' must be a non-empty array");
  }
  std::vector<Input> inputs;
  for (const json& entry : doc["inputs"]) inputs.push_back(read_input(reader, entry));
  return inputs;
}

// ---- launch ------------------------------------------------------------------------------

Dim3 read_dim(const Reader& reader, const json& launch, const char* key) {
  Dim3 d;
  if (!launch.contains(key)) return d;
  const json& value = launch[key];
  const std::string error = std::string("'") + key + "' must be up to 3 numbers";
  if (!value.is_array() || value.size() > 3) reader.fail(error);
  for (const json& v : value) {
    if (!v.is_number_unsigned()) reader.fail(error);
  }
  if (value.size() > 0) d.x = value[0].get<unsigned>();
  if (value.size() > 1) d.y = value[1].get<unsigned>();
  if (value.size() > 2) d.z = value[2].get<unsigned>();
  return d;
}

ArgValue scalar_value(const Reader& reader, const std::string& name, const Type& type, const json& value) {
  switch (type.scalar) {
    case Scalar::int32: return arg_value(value.get<std::int32_t>());
    case Scalar::int64: return arg_value(value.get<std::int64_t>());
    case Scalar::uint32: return arg_value(value.get<std::uint32_t>());
    case Scalar::uint64: return arg_value(value.get<std::uint64_t>());
    case Scalar::float32: return arg_value(value.get<float>());
    case Scalar::float64: return arg_value(value.get<double>());
    default: reader.fail("argument type " + name + " is not supported");
  }
}

LaunchArg read_arg(const Reader& reader, const json& arg) {
  if (!arg.is_object() || arg.size() < 1) reader.fail("an argument must be an object");
  if (arg.contains("output")) {
    OutputArg output;
    output.type = reader.type("argument 'output'", reader.get<std::string>(arg, "output", ""));
    if (arg.contains("count") && !arg["count"].is_number_unsigned()) reader.fail("'count' must be unsigned");
    output.count = reader.get<std::size_t>(arg, "count", 1);
    return output;
  }
  if (arg.size() != 1 || !arg.begin().value().is_number()) reader.fail("a scalar argument is {\"<type>\": <number>}");
  const std::string name = arg.begin().key();
  const Type type = reader.type("argument type", name);
  return ScalarArg{type, scalar_value(reader, name, type, arg.begin().value())};
}

Launch read_launch(const Reader& reader, const json& object) {
  if (!object.is_object()) reader.fail("'launch' must be an object");
  Launch launch;
  launch.kernel = reader.get<std::string>(object, "kernel", "");
  launch.grid = read_dim(reader, object, "grid");
  launch.block = read_dim(reader, object, "block");
  if (object.contains("args")) {
    if (!object["args"].is_array()) reader.fail("'args' must be an array");
    for (const json& arg : object["args"]) launch.args.push_back(read_arg(reader, arg));
  }
  if (object.contains("expect")) {
    if (!object["expect"].is_array()) reader.fail("launch 'expect' must be an array");
    for (const json& v : object["expect"]) {
      if (!v.is_number()) reader.fail("launch 'expect' values must be numbers");
      launch.expect.push_back({v.get<double>(), v.dump()});
    }
  }
  return launch;
}

// ---- the whole file ----------------------------------------------------------------------

Builder read_builder(const Reader& reader, const json& doc) {
  const std::string name = reader.get<std::string>(doc, "builder", "linker");
  if (name == "linker") return Builder::linker;
  if (name == "kernel") return Builder::kernel;
  if (name == "module") return Builder::module;
  reader.fail("'builder' must be linker, kernel or module, not '" + name + "'");
}

BackendChoice read_backend(const Reader& reader, const json& doc) {
  const std::string name = reader.get<std::string>(doc, "backend", "nvjitlink");
  if (name == "nvjitlink") return BackendChoice::nvjitlink;
  if (name == "driver") return BackendChoice::driver;
  if (name == "both") return BackendChoice::both;
  reader.fail("'backend' must be nvjitlink, driver or both, not '" + name + "'");
}

Scenario read_scenario(const Reader& reader, const json& doc) {
  if (!doc.is_object()) reader.fail("the top level must be an object");
  if (reader.get<int>(doc, "schema", 0) != schema_version) {
    reader.fail("'schema' must be " + std::to_string(schema_version));
  }
  Scenario scenario;
  scenario.file = reader.path();
  scenario.name = reader.get<std::string>(doc, "name", "");
  if (scenario.name.empty()) reader.fail("'name' is missing");
  scenario.backend = read_backend(reader, doc);
  scenario.builder = read_builder(reader, doc);
  scenario.reported = reader.get<std::string>(doc, "reported", "");
  scenario.cujit_behaviour = reader.get<std::string>(doc, "cujit", "");
  scenario.steps = read_steps(reader, doc);
  if (doc.contains("reported_failure")) {
    if (!doc["reported_failure"].is_object()) reader.fail("'reported_failure' must be an object");
    scenario.reported_failure = read_error_match(reader, doc["reported_failure"]);
  }
  scenario.inputs = read_inputs(reader, doc);
  if (doc.contains("launch")) scenario.launch = read_launch(reader, doc["launch"]);
  return scenario;
}

}  // namespace

Scenario load_scenario(const fs::path& path) {
  const Reader reader(path);
  const json doc = reader.load();
  try {
    return read_scenario(reader, doc);
  } catch (const json::exception& error) {
    reader.fail(std::string("malformed: ") + error.what());
  }
}

}  // namespace cujit::scenarios
