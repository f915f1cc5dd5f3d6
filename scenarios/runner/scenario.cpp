#include "runner/scenario.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cujit/abi.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/cache_key.hpp"
#include "cujit/device.hpp"
#include "cujit/kernel_builder.hpp"
#include "cujit/linker.hpp"
#include "cujit/module.hpp"
#include "cujit/nrt.hpp"
#include "cujit/program.hpp"

namespace cujit::scenarios {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr int schema_version = 1;

class Reader {
 public:
  explicit Reader(fs::path path) : path_(std::move(path)) {}
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorKind::usage, "scenario file", "'" + path_.string() + "': " + what);
  }
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
  template <class T>
  T get(const json& object, const char* key, const T& fallback) const {
    if (!object.contains(key)) return fallback;
    try {
      return object.at(key).get<T>();
    } catch (const json::exception&) {
      fail(std::string("field '") + key + "' has the wrong type");
    }
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

struct Options {
  std::string arch = "sm_90";
  bool lto = false;
  bool debug = false;
  bool lineinfo = false;
  std::optional<bool> nrt;          // per-kernel override
  std::optional<bool> nrt_global;   // the global switch for this step
};

void apply_options(const Reader& reader, const json& object, Options& options) {
  if (!object.is_object()) reader.fail("'options' must be an object");
  for (const auto& [key, value] : object.items()) {
    const bool boolean = key != "arch" && key != "nrt";
    if ((boolean && !value.is_boolean()) || (key == "arch" && !value.is_string()) ||
        (key == "nrt" && !value.is_boolean() && !value.is_null())) {
      if (key == "arch" || key == "lto" || key == "debug" || key == "lineinfo" || key == "nrt" || key == "nrt_global") {
        reader.fail("option '" + key + "' has the wrong type");
      }
    }
    if (key == "arch") options.arch = value.get<std::string>();
    else if (key == "lto") options.lto = value.get<bool>();
    else if (key == "debug") options.debug = value.get<bool>();
    else if (key == "lineinfo") options.lineinfo = value.get<bool>();
    else if (key == "nrt") options.nrt = value.is_null() ? std::nullopt : std::optional<bool>(value.get<bool>());
    else if (key == "nrt_global") options.nrt_global = value.get<bool>();
    else reader.fail("unknown option '" + key + "'");
  }
}

Arch resolve_arch(const std::string& arch) { return arch == "device" ? Arch::of_device(0) : Arch::parse(arch); }

struct Input {
  LinkableCode code;
  bool from_file;      // add_file rather than add_data
  fs::path path;
  bool source;         // the kernel's own code (builder "kernel")
};

std::string hex_bytes(const std::string& hex, const Reader& reader) {
  if (hex.size() % 2 != 0) reader.fail("patch hex '" + hex + "' has an odd length");
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

std::vector<Input> read_inputs(const Reader& reader, const json& doc, const fs::path& fixture_dir,
                               const Options& options) {
  if (!doc.contains("inputs") || !doc["inputs"].is_array() || doc["inputs"].empty()) {
    reader.fail("'inputs' must be a non-empty array");
  }
  std::vector<Input> inputs;
  for (const json& entry : doc["inputs"]) {
    const bool nrt_flag = reader.get<bool>(entry, "nrt", false);
    const bool source = reader.get<std::string>(entry, "role", "link") == "source";
    if (entry.contains("abi")) {
      const json& spec = entry["abi"];
      abi::DeviceFunction fn;
      fn.name = reader.get<std::string>(spec, "name", "");
      fn.signature = Signature::parse(reader.get<std::string>(spec, "signature", ""));
      fn.param_names = reader.get<std::vector<std::string>>(spec, "params", {});
      fn.body = reader.get<std::string>(spec, "body", "");
      abi::CompileOptions compile;
      compile.abi = reader.get<std::string>(spec, "abi", "c");
      if (spec.contains("abi_name")) compile.abi_name = spec["abi_name"].get<std::string>();
      compile.output = reader.get<std::string>(spec, "output", "ltoir");
      compile.arch = resolve_arch(options.arch);
      LinkableCode code = abi::compile(fn, compile).code;
      inputs.push_back({std::move(code).set_nrt(nrt_flag), false, {}, source});
      continue;
    }
    fs::path path;
    if (entry.contains("path")) path = reader.path().parent_path() / entry["path"].get<std::string>();
    if (entry.contains("fixture")) path = fixture_dir / entry["fixture"].get<std::string>();
    const std::string origin = reader.get<std::string>(entry, "origin", entry.contains("inline") ? "bytes" : "file");
    const bool patched = entry.contains("patch");
    if (!path.empty() && origin == "file" && !patched) {
      inputs.push_back({LinkableCode::from_path(path).set_nrt(nrt_flag), true, path, source});
      continue;
    }
    std::string bytes;
    std::string default_name;
    if (entry.contains("inline")) {
      bytes = entry["inline"].get<std::string>();
    } else if (!path.empty()) {
      std::ifstream in(path, std::ios::binary);
      if (!in) reader.fail("input '" + path.string() + "' cannot be read");
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      default_name = path.filename().string();
    } else {
      reader.fail("an input needs 'path', 'fixture', 'inline' or 'abi'");
    }
    if (patched) {
      for (const json& patch : entry["patch"]) {
        const auto offset = patch.at("offset").get<std::size_t>();
        const std::string replacement = hex_bytes(patch.at("hex").get<std::string>(), reader);
        if (offset + replacement.size() > bytes.size()) reader.fail("a patch past the end of an input");
        bytes.replace(offset, replacement.size(), replacement);
      }
    }
    const std::string format_name = reader.get<std::string>(entry, "format", "");
    const auto format = parse_format(format_name);
    if (!format) reader.fail("input format '" + format_name + "' is not a format");
    LinkableCode code = LinkableCode::from_bytes(*format, std::move(bytes), reader.get<std::string>(entry, "name", default_name));
    inputs.push_back({std::move(code).set_nrt(nrt_flag), false, {}, source});
  }
  return inputs;
}

struct Expectation {
  bool success = true;
  std::string kind;
  std::string message;
  std::optional<int> cubin_sm;
};

Expectation read_expectation(const Reader& reader, const json& object) {
  if (!object.is_object()) reader.fail("'expect' must be an object");
  Expectation e;
  const std::string outcome = reader.get<std::string>(object, "outcome", "");
  if (outcome != "success" && outcome != "error") reader.fail("expected 'outcome' to be 'success' or 'error'");
  e.success = outcome == "success";
  e.kind = reader.get<std::string>(object, "kind", "");
  e.message = reader.get<std::string>(object, "message", "");
  if (object.contains("cubin_sm")) {
    if (!object["cubin_sm"].is_number_integer()) reader.fail("'cubin_sm' must be an integer");
    e.cubin_sm = object["cubin_sm"].get<int>();
  }
  return e;
}

struct Launch {
  std::string kernel;
  Dim3 grid, block;
  json args;
  json expect;
};

Dim3 dim(const json& value) {
  Dim3 d;
  if (value.is_array()) {
    if (value.size() > 0) d.x = value[0].get<unsigned>();
    if (value.size() > 1) d.y = value[1].get<unsigned>();
    if (value.size() > 2) d.z = value[2].get<unsigned>();
  }
  return d;
}

std::size_t type_size(const std::string& type) { return Type::parse(type).size(); }

ArgValue scalar(const std::string& type, const json& value) {
  const Type t = Type::parse(type);
  switch (t.scalar) {
    case Scalar::int32: return arg_value(value.get<std::int32_t>());
    case Scalar::int64: return arg_value(value.get<std::int64_t>());
    case Scalar::uint32: return arg_value(value.get<std::uint32_t>());
    case Scalar::uint64: return arg_value(value.get<std::uint64_t>());
    case Scalar::float32: return arg_value(value.get<float>());
    case Scalar::float64: return arg_value(value.get<double>());
    default: throw Error(ErrorKind::usage, "scenario file", "argument type " + type + " is not supported");
  }
}

std::vector<std::string> run_launch(const Launch& launch, const Kernel& kernel, const std::string& expected_type,
                                    std::vector<double>& values) {
  std::vector<DeviceBuffer> buffers;
  std::vector<ArgValue> args;
  std::string output_type;
  std::size_t output_count = 0;
  std::size_t output_index = 0;
  for (const json& arg : launch.args) {
    if (arg.contains("output")) {
      output_type = arg["output"].get<std::string>();
      output_count = arg.value("count", std::size_t{1});
      buffers.emplace_back(output_count * type_size(output_type));
      buffers.back().fill_bytes(0xAB);
      output_index = buffers.size() - 1;
      args.push_back(arg_value(buffers.back().ptr()));
    } else if (arg.size() == 1) {
      args.push_back(scalar(arg.begin().key(), arg.begin().value()));
    }
  }
  std::vector<KernelArg> raw;
  for (const ArgValue& value : args) raw.push_back(KernelArg{value.bytes.data(), value.bytes.size()});
  LaunchConfig config;
  config.grid = launch.grid;
  config.block = launch.block;
  kernel.launch(config, raw);
  synchronize(nullptr);
  (void)expected_type;
  std::vector<std::string> text;
  if (output_type.empty()) return text;
  const Type type = Type::parse(output_type);
  std::vector<unsigned char> bytes(output_count * type.size());
  buffers[output_index].copy_to_host(bytes.data(), bytes.size());
  for (std::size_t i = 0; i < output_count; ++i) {
    double value = 0;
    const unsigned char* at = bytes.data() + i * type.size();
    switch (type.scalar) {
      case Scalar::int32: { std::int32_t v; std::memcpy(&v, at, 4); value = v; break; }
      case Scalar::int64: { std::int64_t v; std::memcpy(&v, at, 8); value = static_cast<double>(v); break; }
      case Scalar::uint32: { std::uint32_t v; std::memcpy(&v, at, 4); value = v; break; }
      case Scalar::float32: { float v; std::memcpy(&v, at, 4); value = v; break; }
      case Scalar::float64: { double v; std::memcpy(&v, at, 8); value = v; break; }
      default: break;
    }
    values.push_back(value);
    std::ostringstream out;
    out << value;
    text.push_back(out.str());
  }
  return text;
}

bool matches(const Error& error, const std::string& kind, const std::string& message) {
  return (kind.empty() || to_string(error.kind()) == kind) &&
         (message.empty() || std::string(error.what()).find(message) != std::string::npos);
}

std::string environment() {
  std::string text = "cujit " CUJIT_SCENARIO_VERSION ", NVRTC " + nvrtc_version() + ", nvJitLink " +
                     nvjitlink_version();
  if (has_device()) {
    text += ", driver " + driver_version() + ", device " + device_name(0) + " (" + Arch::of_device(0).sm() + ")";
  } else {
    text += ", no device (" + no_device_reason() + ")";
  }
  return text;
}

struct Step {
  Options options;
  Expectation expect;
};

}  // namespace

std::string_view to_string(Verdict verdict) noexcept {
  switch (verdict) {
    case Verdict::as_expected: return "as expected";
    case Verdict::reproduced: return "reproduced";
    case Verdict::not_as_expected: return "not as expected";
  }
  return "unknown";
}

ScenarioSummary summarize(const fs::path& path) {
  const Reader reader(path);
  const json doc = reader.load();
  if (!doc.is_object()) reader.fail("the top level must be an object");
  if (reader.get<int>(doc, "schema", 0) != schema_version) {
    reader.fail("'schema' must be " + std::to_string(schema_version));
  }
  ScenarioSummary summary;
  summary.path = path;
  summary.name = reader.get<std::string>(doc, "name", "");
  if (summary.name.empty()) reader.fail("'name' is missing");
  const std::string backend = reader.get<std::string>(doc, "backend", "nvjitlink");
  if (backend != "nvjitlink" && backend != "driver" && backend != "both") {
    reader.fail("'backend' must be nvjitlink, driver or both, not '" + backend + "'");
  }
  const std::string builder = reader.get<std::string>(doc, "builder", "linker");
  if (builder != "linker" && builder != "kernel" && builder != "module") {
    reader.fail("'builder' must be linker, kernel or module, not '" + builder + "'");
  }
  summary.needs_device = doc.contains("launch") || builder == "module" || backend != "nvjitlink";
  return summary;
}

ScenarioSummary validate(const fs::path& path) {
  const ScenarioSummary summary = summarize(path);
  const Reader reader(path);
  const json doc = reader.load();
  try {
    Options options;
    if (doc.contains("options")) apply_options(reader, doc["options"], options);
    if (doc.contains("steps")) {
      if (!doc["steps"].is_array()) reader.fail("'steps' must be an array");
      for (const json& step : doc["steps"]) {
        if (!step.is_object() || !step.contains("expect")) reader.fail("a step needs 'expect'");
        Options step_options = options;
        if (step.contains("options")) apply_options(reader, step["options"], step_options);
        (void)read_expectation(reader, step["expect"]);
      }
    } else {
      if (!doc.contains("expect")) reader.fail("'expect' is missing");
      (void)read_expectation(reader, doc["expect"]);
    }
    if (doc.contains("reported_failure") && !doc["reported_failure"].is_object()) {
      reader.fail("'reported_failure' must be an object");
    }
    if (!doc.contains("inputs") || !doc["inputs"].is_array() || doc["inputs"].empty()) {
      reader.fail("'inputs' must be a non-empty array");
    }
    for (const json& entry : doc["inputs"]) {
      if (!entry.is_object()) reader.fail("an input must be an object");
      const int sources = int(entry.contains("path")) + int(entry.contains("fixture")) +
                          int(entry.contains("inline")) + int(entry.contains("abi"));
      if (sources != 1) reader.fail("an input needs exactly one of 'path', 'fixture', 'inline', 'abi'");
      if (entry.contains("abi")) {
        const json& spec = entry["abi"];
        if (!spec.is_object()) reader.fail("'abi' must be an object");
        (void)Signature::parse(reader.get<std::string>(spec, "signature", ""));
        continue;
      }
      if (entry.contains("format") && !parse_format(reader.get<std::string>(entry, "format", ""))) {
        reader.fail("input format '" + reader.get<std::string>(entry, "format", "") + "' is not a format");
      }
      if (entry.contains("patch")) {
        if (!entry["patch"].is_array()) reader.fail("'patch' must be an array");
        for (const json& patch : entry["patch"]) {
          if (!patch.is_object() || !patch.contains("offset") || !patch.contains("hex") ||
              !patch["offset"].is_number_unsigned() || !patch["hex"].is_string()) {
            reader.fail("a patch needs an unsigned 'offset' and a 'hex' string");
          }
          const std::string hex = patch["hex"].get<std::string>();
          if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) reader.fail("patch hex is not hex");
          (void)hex_bytes(hex, reader);
        }
      }
      (void)reader.get<bool>(entry, "nrt", false);
      (void)reader.get<std::string>(entry, "name", "");
    }
    if (doc.contains("launch")) {
      const json& l = doc["launch"];
      if (!l.is_object()) reader.fail("'launch' must be an object");
      for (const char* key : {"grid", "block"}) {
        if (!l.contains(key)) continue;
        if (!l[key].is_array() || l[key].size() > 3) reader.fail(std::string("'") + key + "' must be up to 3 numbers");
        for (const json& v : l[key]) {
          if (!v.is_number_unsigned()) reader.fail(std::string("'") + key + "' must be up to 3 numbers");
        }
      }
      if (l.contains("args")) {
        if (!l["args"].is_array()) reader.fail("'args' must be an array");
        for (const json& arg : l["args"]) {
          if (!arg.is_object() || arg.size() < 1) reader.fail("an argument must be an object");
          if (arg.contains("output")) {
            (void)Type::parse(arg["output"].get<std::string>());
            if (arg.contains("count") && !arg["count"].is_number_unsigned()) reader.fail("'count' must be unsigned");
          } else if (arg.size() != 1 || !arg.begin().value().is_number()) {
            reader.fail("a scalar argument is {\"<type>\": <number>}");
          } else {
            (void)Type::parse(arg.begin().key());
          }
        }
      }
      if (l.contains("expect")) {
        if (!l["expect"].is_array()) reader.fail("launch 'expect' must be an array");
        for (const json& v : l["expect"]) {
          if (!v.is_number()) reader.fail("launch 'expect' values must be numbers");
        }
      }
    }
  } catch (const json::exception& error) {
    reader.fail(std::string("malformed: ") + error.what());
  }
  return summary;
}

ScenarioReport run_scenario(const fs::path& path, const fs::path& fixture_dir) {
  const ScenarioSummary summary = validate(path);
  if (summary.needs_device && !has_device()) {
    throw Error(ErrorKind::cuda, "scenario '" + summary.name + "'",
                "needs a CUDA device (it launches, loads, or uses the driver linker): " + no_device_reason());
  }
  const Reader reader(path);
  const json doc = reader.load();
  ScenarioReport report;
  report.name = summary.name;
  report.reported = reader.get<std::string>(doc, "reported", "");
  report.cujit_behaviour = reader.get<std::string>(doc, "cujit", "");
  report.environment = environment();

  Options base;
  if (doc.contains("options")) apply_options(reader, doc["options"], base);
  std::vector<Step> steps;
  if (doc.contains("steps")) {
    for (const json& step : doc["steps"]) {
      Step s{base, {}};
      if (step.contains("options")) apply_options(reader, step["options"], s.options);
      if (!step.contains("expect")) reader.fail("a step needs 'expect'");
      s.expect = read_expectation(reader, step["expect"]);
      steps.push_back(s);
    }
  } else {
    if (!doc.contains("expect")) reader.fail("'expect' is missing");
    steps.push_back({base, read_expectation(reader, doc["expect"])});
  }
  std::optional<Expectation> reported_failure;
  if (doc.contains("reported_failure")) {
    reported_failure = read_expectation(reader, json{{"outcome", "error"}, {"kind", doc["reported_failure"].value("kind", "")},
                                                     {"message", doc["reported_failure"].value("message", "")}});
  }
  std::optional<Launch> launch;
  if (doc.contains("launch")) {
    const json& l = doc["launch"];
    launch = Launch{reader.get<std::string>(l, "kernel", ""), dim(l.value("grid", json::array({1}))),
                    dim(l.value("block", json::array({1}))), l.value("args", json::array()),
                    l.value("expect", json::array())};
  }
  const std::string builder = reader.get<std::string>(doc, "builder", "linker");
  const std::string backend_name = reader.get<std::string>(doc, "backend", "nvjitlink");
  std::vector<LinkerBackend> backends;
  if (backend_name != "driver") backends.push_back(LinkerBackend::nvjitlink);
  if (backend_name != "nvjitlink") backends.push_back(LinkerBackend::driver);

  CacheConfig cache_config;
  cache_config.mode = CacheMode::memory;  // shared by the steps, never by other runs
  BuildCache cache(cache_config);
  const bool nrt_before = nrt::enabled();

  for (LinkerBackend backend : backends) {
    for (const Step& step : steps) {
      StepReport out;
      out.backend = std::string(to_string(backend));
      out.options = "arch=" + step.options.arch + " lto=" + (step.options.lto ? "on" : "off") +
                    " debug=" + (step.options.debug ? "on" : "off") + " lineinfo=" +
                    (step.options.lineinfo ? "on" : "off") + " nrt=" +
                    (step.options.nrt ? (*step.options.nrt ? "on" : "off") : "default") +
                    " nrt_global=" + (step.options.nrt_global ? (*step.options.nrt_global ? "on" : "off") : "unchanged");
      if (step.options.nrt_global) nrt::set_enabled(*step.options.nrt_global);
      std::vector<double> values;
      try {
        const std::vector<Input> inputs = read_inputs(reader, doc, fixture_dir, step.options);
        if (report.inputs.empty()) {
          for (const Input& input : inputs) {
            report.inputs.push_back({input.code.name(), std::string(cujit::to_string(input.code.format())),
                                     input.code.bytes().size(), sha256_hex(input.code.bytes()), input.code.nrt()});
          }
        }
        Bytes cubin;
        std::optional<Kernel> kernel;
        std::shared_ptr<Module> module;
        std::vector<std::string> compile_options, link_options;
        if (step.options.debug) {
          compile_options.push_back("-G");
          link_options.push_back("-g");
        }
        if (step.options.lineinfo) {
          compile_options.push_back("-lineinfo");
          link_options.push_back("-lineinfo");
        }
        if (builder == "module") {
          module = Module::load(inputs.front().code.bytes(), inputs.front().code.name());
        } else if (builder == "kernel") {
          KernelOptions options;
          options.arch = resolve_arch(step.options.arch);
          options.lto = step.options.lto;
          options.backend = backend;
          options.nrt = step.options.nrt;
          options.compile_options = compile_options;
          options.cache = &cache;
          KernelBuilder kernel_builder(launch ? launch->kernel : summary.name, options);
          for (const Input& input : inputs) {
            if (input.source) kernel_builder.source(input.code);
            else kernel_builder.link(input.code);
          }
          const LinkedKernel linked = kernel_builder.link_cubin();
          cubin = linked.link.cubin;
          out.log = linked.link.info_log;
        } else {
          LinkOptions options;
          options.arch = resolve_arch(step.options.arch);
          options.lto = step.options.lto;
          options.backend = backend;
          options.compile_options = compile_options;
          options.nvjitlink_options = link_options;
          Linker linker(options);
          for (const Input& input : inputs) {
            if (input.from_file) linker.add_file(input.path);
            else linker.add(input.code);
          }
          const LinkResult result = linker.link();
          cubin = result.cubin;
          out.log = result.info_log;
        }
        if (launch) {
          if (!module) module = Module::load(cubin, summary.name);
          kernel.emplace(module->kernel(launch->kernel));
          out.launch_output = run_launch(*launch, *kernel, "", values);
        } else if (builder == "module" && !launch) {
          // loading alone is the scenario
        }
        out.outcome = "success";
        if (!step.expect.success) {
          out.verdict = Verdict::not_as_expected;
          out.why = "expected a " + step.expect.kind + " error containing '" + step.expect.message + "', got success";
        } else if (step.expect.cubin_sm && cubin_sm_number(cubin) != step.expect.cubin_sm) {
          out.verdict = Verdict::not_as_expected;
          out.why = "the cubin is for sm_" + std::to_string(cubin_sm_number(cubin).value_or(0)) +
                    ", expected sm_" + std::to_string(*step.expect.cubin_sm);
        } else {
          out.verdict = Verdict::as_expected;
          if (launch && !launch->expect.empty()) {
            for (std::size_t i = 0; i < launch->expect.size(); ++i) {
              const double want = launch->expect[i].get<double>();
              if (i >= values.size() || std::fabs(values[i] - want) > 1e-6 * std::max(1.0, std::fabs(want))) {
                out.verdict = Verdict::not_as_expected;
                out.why = "output[" + std::to_string(i) + "] is " + (i < values.size() ? out.launch_output[i] : "missing") +
                          ", expected " + launch->expect[i].dump();
                break;
              }
            }
          }
        }
      } catch (const Error& error) {
        if (error.kind() == ErrorKind::usage && std::string(error.component()) == "scenario file") throw;
        out.outcome = std::string(cujit::to_string(error.kind())) + " error: " + error.message();
        out.log = error.log();
        if (!step.expect.success && matches(error, step.expect.kind, step.expect.message)) {
          out.verdict = Verdict::as_expected;
        } else if (reported_failure && matches(error, reported_failure->kind, reported_failure->message)) {
          out.verdict = Verdict::reproduced;
          out.why = "this is the failure originally reported";
        } else {
          out.verdict = Verdict::not_as_expected;
          out.why = step.expect.success ? "expected success" : "expected a " + step.expect.kind +
                                                                   " error containing '" + step.expect.message + "'";
        }
      }
      nrt::set_enabled(nrt_before);
      if (static_cast<int>(out.verdict) > static_cast<int>(report.verdict)) report.verdict = out.verdict;
      report.steps.push_back(std::move(out));
    }
  }
  return report;
}

std::string ScenarioReport::text() const {
  std::ostringstream out;
  out << "scenario: " << name << "\n";
  if (!reported.empty()) out << "reported: " << reported << "\n";
  if (!cujit_behaviour.empty()) out << "cujit:    " << cujit_behaviour << "\n";
  out << "environment: " << environment << "\n";
  out << "inputs:\n";
  for (const InputReport& input : inputs) {
    out << "  " << (input.name.empty() ? "(unnamed)" : input.name) << "  " << input.format << "  "
        << input.bytes << " bytes  sha256 " << input.sha256.substr(0, 16) << (input.nrt ? "  nrt" : "") << "\n";
  }
  int index = 1;
  for (const StepReport& step : steps) {
    out << "step " << index++ << " [" << step.backend << "] " << step.options << "\n";
    out << "  outcome: " << step.outcome << "\n";
    if (!step.launch_output.empty()) {
      out << "  output:";
      for (const std::string& value : step.launch_output) out << " " << value;
      out << "\n";
    }
    if (!step.log.empty()) {
      std::istringstream lines(step.log);
      std::string line;
      out << "  log:\n";
      while (std::getline(lines, line)) out << "    " << line << "\n";
    }
    out << "  verdict: " << scenarios::to_string(step.verdict) << (step.why.empty() ? "" : " (" + step.why + ")") << "\n";
  }
  out << "verdict: " << scenarios::to_string(verdict) << "\n";
  return out.str();
}

std::string ScenarioReport::json() const {
  nlohmann::json doc;
  doc["scenario"] = name;
  doc["reported"] = reported;
  doc["cujit"] = cujit_behaviour;
  doc["environment"] = environment;
  doc["verdict"] = scenarios::to_string(verdict);
  for (const InputReport& input : inputs) {
    doc["inputs"].push_back({{"name", input.name}, {"format", input.format}, {"bytes", input.bytes},
                             {"sha256", input.sha256}, {"nrt", input.nrt}});
  }
  for (const StepReport& step : steps) {
    doc["steps"].push_back({{"backend", step.backend}, {"options", step.options}, {"outcome", step.outcome},
                            {"log", step.log}, {"output", step.launch_output},
                            {"verdict", scenarios::to_string(step.verdict)}, {"why", step.why}});
  }
  return doc.dump(2);
}

}  // namespace cujit::scenarios
