// Runs a typed Scenario. Per backend and step: read the inputs, build with the builder
// the scenario names, launch if it says so, and judge the outcome against the step's
// expectation and the originally reported failure.
#include "runner/scenario_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <sstream>

#include "cujit/abi.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/cache_key.hpp"
#include "cujit/device.hpp"
#include "cujit/graph.hpp"
#include "cujit/kernel_builder.hpp"
#include "cujit/linker.hpp"
#include "cujit/module.hpp"
#include "cujit/nrt.hpp"
#include "cujit/program.hpp"
#include "cujit/reduce.hpp"
#include "link/defined_symbols.hpp"
#include "link/failure_capture.hpp"
#include "support/file_io.hpp"

namespace cujit::scenarios {

std::string_view to_string(Verdict verdict) noexcept {
  switch (verdict) {
    case Verdict::as_expected: return "as expected";
    case Verdict::reproduced: return "reproduced";
    case Verdict::not_as_expected: return "not as expected";
  }
  return "unknown";
}

namespace {

namespace fs = std::filesystem;

Arch resolve_arch(const std::string& arch) { return arch == "device" ? Arch::of_device(0) : Arch::parse(arch); }

// An input as one step adds it.
struct StepInput {
  LinkableCode code;
  std::optional<fs::path> file;  // set: add_file rather than add_data
  bool kernel_source = false;
  const Input* spec = nullptr;
  std::string symbol;  // an "abi" input's symbol
};

abi::CompiledFunction compile_abi(const InputAbi& spec, const StepOptions& options) {
  abi::DeviceFunction fn;
  fn.name = spec.name;
  fn.signature = spec.signature;
  fn.param_names = spec.params;
  fn.body = spec.body;
  abi::CompileOptions compile;
  compile.abi = spec.abi;
  compile.abi_name = spec.abi_name;
  compile.output = spec.output;
  compile.arch = resolve_arch(options.arch);
  return abi::compile(fn, compile);
}

// The bytes of an input added as data, patched.
std::string input_bytes(const Scenario& scenario, const Input& input, const fs::path& path) {
  std::string bytes;
  if (const auto* text = std::get_if<InputInline>(&input.source)) {
    bytes = text->text;
  } else {
    // Bounded and regular files only: a FIFO or /dev/zero named by a scenario neither
    // hangs nor fills memory.
    try {
      bytes = detail::read_file(path, "scenario input", max_input_file_bytes);
    } catch (const Error& error) {
      fail_scenario_file(scenario.file, input.field + " cannot be read: " + error.message());
    }
  }
  for (std::size_t i = 0; i < input.patches.size(); ++i) {
    const Patch& patch = input.patches[i];
    if (patch.offset > bytes.size() || patch.bytes.size() > bytes.size() - patch.offset) {
      fail_scenario_file(scenario.file, input.field + ".patch[" + std::to_string(i) + "] (offset " +
                                            std::to_string(patch.offset) + ", " + std::to_string(patch.bytes.size()) +
                                            " bytes) reaches past the end of the input (" +
                                            std::to_string(bytes.size()) + " bytes)");
    }
    bytes.replace(patch.offset, patch.bytes.size(), patch.bytes);
  }
  return bytes;
}

StepInput step_input(const Scenario& scenario, const Input& input, const fs::path& fixture_dir,
                     const StepOptions& options) {
  if (const auto* spec = std::get_if<InputAbi>(&input.source)) {
    abi::CompiledFunction compiled = compile_abi(*spec, options);
    return {std::move(compiled.code).set_nrt(input.nrt), std::nullopt, input.kernel_source, &input,
            std::move(compiled.symbol)};
  }
  // Checked against the scenario's input roots (or the fixture directory) as it is read.
  const fs::path path = input_file_path(scenario, input, fixture_dir);
  if (input.origin == Origin::file) {
    return {LinkableCode::from_path(path).set_nrt(input.nrt), path, input.kernel_source, &input, {}};
  }
  const std::string name = input.name.value_or(path.empty() ? std::string() : path.filename().string());
  // A bytes input always has a format: load_scenario checks it.
  LinkableCode code = LinkableCode::from_bytes(*input.format, input_bytes(scenario, input, path), name);
  return {std::move(code).set_nrt(input.nrt), std::nullopt, input.kernel_source, &input, {}};
}

std::vector<StepInput> step_inputs(const Scenario& scenario, const fs::path& fixture_dir, const StepOptions& options) {
  std::vector<StepInput> inputs;
  for (const Input& input : scenario.inputs) inputs.push_back(step_input(scenario, input, fixture_dir, options));
  return inputs;
}

// ---- launch ------------------------------------------------------------------------------

double read_value(const Type& type, const unsigned char* at) {
  switch (type.scalar) {
    case Scalar::int32: { std::int32_t v; std::memcpy(&v, at, 4); return v; }
    case Scalar::int64: { std::int64_t v; std::memcpy(&v, at, 8); return static_cast<double>(v); }
    case Scalar::uint32: { std::uint32_t v; std::memcpy(&v, at, 4); return v; }
    case Scalar::float32: { float v; std::memcpy(&v, at, 4); return v; }
    case Scalar::float64: { double v; std::memcpy(&v, at, 8); return v; }
    default: return 0;
  }
}

// Launches once (directly, or captured into a CUDA graph that is instantiated and launched:
// the graph builder) and reads back the last output buffer: its values, and as text.
std::vector<std::string> run_launch(const Launch& launch, const Kernel& kernel, std::vector<double>& values,
                                    const std::shared_ptr<Module>& through_graph) {
  std::vector<DeviceBuffer> buffers;
  std::vector<ArgValue> args;
  const OutputArg* output = nullptr;
  std::size_t output_index = 0;
  for (const LaunchArg& arg : launch.args) {
    if (const auto* out = std::get_if<OutputArg>(&arg)) {
      buffers.emplace_back(out->count * out->type.size());
      buffers.back().fill_bytes(0xAB);
      output = out;
      output_index = buffers.size() - 1;
      args.push_back(arg_value(buffers.back().ptr()));
    } else {
      args.push_back(std::get<ScalarArg>(arg).value);
    }
  }
  std::vector<KernelArg> raw;
  for (const ArgValue& value : args) raw.push_back(KernelArg{value.bytes.data(), value.bytes.size()});
  LaunchConfig config;
  config.grid = launch.grid;
  config.block = launch.block;
  if (through_graph) {
    const Stream stream;
    Graph graph = capture(stream.handle(), [&](StreamHandle captured) {
      LaunchConfig on_stream = config;
      on_stream.stream = captured;
      kernel.launch(on_stream, raw);
    });
    graph.retain(through_graph);
    graph.launch(stream.handle());
    graph.synchronize();
  } else {
    kernel.launch(config, raw);
  }
  synchronize(nullptr);
  std::vector<std::string> text;
  if (output == nullptr) return text;
  const std::size_t size = output->type.size();
  std::vector<unsigned char> bytes(output->count * size);
  buffers[output_index].copy_to_host(bytes.data(), bytes.size());
  for (std::size_t i = 0; i < output->count; ++i) {
    const double value = read_value(output->type, bytes.data() + i * size);
    values.push_back(value);
    std::ostringstream out;
    out << value;
    text.push_back(out.str());
  }
  return text;
}

// ---- verdicts ----------------------------------------------------------------------------

bool matches(const Error& error, const ErrorMatch& match) {
  return (!match.kind || error.kind() == *match.kind) &&
         (match.message.empty() || std::string(error.what()).find(match.message) != std::string::npos);
}

std::string expected_error(const ErrorMatch& match) {
  return "expected a " + std::string(match.kind ? to_string(*match.kind) : "") + " error containing '" +
         match.message + "'";
}

// A step that built (and launched): the verdict against what it expects.
void judge_success(StepReport& out, const Expectation& expect, const std::optional<Launch>& launch,
                   const Bytes& cubin, const std::vector<double>& values) {
  if (!expect.success) {
    out.verdict = Verdict::not_as_expected;
    out.why = expected_error(expect.error) + ", got success";
    return;
  }
  if (expect.cubin_sm && cubin_sm_number(cubin) != expect.cubin_sm) {
    out.verdict = Verdict::not_as_expected;
    out.why = "the cubin is for sm_" + std::to_string(cubin_sm_number(cubin).value_or(0)) + ", expected sm_" +
              std::to_string(*expect.cubin_sm);
    return;
  }
  out.verdict = Verdict::as_expected;
  if (!launch) return;
  for (std::size_t i = 0; i < launch->expect.size(); ++i) {
    const double want = launch->expect[i].value;
    if (i >= values.size() || std::fabs(values[i] - want) > 1e-6 * std::max(1.0, std::fabs(want))) {
      out.verdict = Verdict::not_as_expected;
      out.why = "output[" + std::to_string(i) + "] is " + (i < values.size() ? out.launch_output[i] : "missing") +
                ", expected " + launch->expect[i].text;
      return;
    }
  }
}

void judge_failure(StepReport& out, const Error& error, const Expectation& expect,
                   const std::optional<ErrorMatch>& reported_failure) {
  out.error = StepError{error.kind(), error.message()};
  out.log = error.log();
  if (!expect.success && matches(error, expect.error)) {
    out.verdict = Verdict::as_expected;
  } else if (reported_failure && matches(error, *reported_failure)) {
    out.verdict = Verdict::reproduced;
    out.why = "this is the failure originally reported";
  } else {
    out.verdict = Verdict::not_as_expected;
    out.why = expect.success ? "expected success" : expected_error(expect.error);
  }
}

// ---- one step ----------------------------------------------------------------------------

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

// Sets NRT's global switch for one step and puts it back, whatever the step does.
class NrtSwitch {
 public:
  explicit NrtSwitch(std::optional<bool> enabled) {
    if (enabled) nrt::set_enabled(*enabled);
  }
  ~NrtSwitch() { nrt::set_enabled(before_); }
  NrtSwitch(const NrtSwitch&) = delete;
  NrtSwitch& operator=(const NrtSwitch&) = delete;

 private:
  bool before_ = nrt::enabled();
};

struct Built {
  std::optional<LinkableCode> code;
  std::shared_ptr<Module> module;
  std::string log;
};

// The step's options as typed link flags, which both backends honour or refuse by name
// (and which reach NVRTC for CUDA C++ inputs: -G, -lineinfo, the math flags).
LinkFlags link_flags(const StepOptions& step) {
  LinkFlags flags;
  flags.debug = step.debug;
  flags.line_info = step.lineinfo;
  flags.max_registers = step.max_registers;
  flags.optimization_level = step.optimization_level;
  flags.ftz = step.ftz;
  flags.prec_div = step.prec_div;
  flags.prec_sqrt = step.prec_sqrt;
  flags.fma = step.fma;
  return flags;
}

DeclaredFunction declared_function(const Declaration& d, const LinkableCode& code) {
  DeclaredFunction function;
  function.name = d.name;
  function.module = d.module;
  function.signatures = {d.signature};
  function.abi = d.abi;
  function.abi_name = d.abi_name;
  function.link = {code};
  return function;
}

// The abi builder: the "abi" inputs compiled (done when the inputs were read), and every
// other input that can be read (PTX, cubin) defining each of their symbols.
std::string check_abi_symbols(const std::vector<StepInput>& inputs) {
  std::string log;
  for (const StepInput& input : inputs) {
    if (!input.symbol.empty()) log += "cujit::abi: " + input.symbol + "\n";
  }
  for (const StepInput& input : inputs) {
    if (!input.symbol.empty()) continue;
    const std::optional<std::vector<std::string>> defined = detail::defined_symbols(input.code);
    if (!defined) {
      throw Error(ErrorKind::unsupported, "scenario abi builder",
                  "'" + input.code.name() + "' is " + std::string(to_string(input.code.format())) +
                      ", whose symbols cannot be read; give PTX or a cubin");
    }
    for (const StepInput& compiled : inputs) {
      if (compiled.symbol.empty()) continue;
      if (std::find(defined->begin(), defined->end(), compiled.symbol) == defined->end()) {
        throw Error(ErrorKind::link, "scenario abi builder",
                    "'" + input.code.name() + "' does not define '" + compiled.symbol +
                        "', the symbol cujit::abi gives " + compiled.spec->field,
                    log);
      }
    }
    log += "'" + input.code.name() + "' defines them\n";
  }
  return log;
}

reduce::ReduceBuild build_reduction(const Scenario& scenario, const std::vector<StepInput>& inputs,
                                    const StepOptions& step, BuildCache& cache) {
  const ReduceSpecFile& file = *scenario.reduce;
  reduce::ReduceSpec spec;
  spec.input = file.input;
  spec.output = file.output;
  spec.accumulator = file.accumulator;
  spec.arch = resolve_arch(step.arch);
  spec.config.nvrtc_options = link_nvrtc_options(link_flags(step));
  if (file.op == "declared") {
    for (const StepInput& input : inputs) {
      if (input.spec->declares) {
        const Declaration& d = *input.spec->declares;
        spec.op = reduce::Operator::foreign(input.code, d.abi_name.value_or(d.name), d.signature);
      }
    }
  } else {
    spec.op = reduce::Operator::builtin(file.op == "min"   ? reduce::Builtin::min
                                        : file.op == "max" ? reduce::Builtin::max
                                                           : reduce::Builtin::sum);
  }
  return reduce::build_reduce(spec, cache);
}

Built build(const Scenario& scenario, const std::vector<StepInput>& inputs, const StepOptions& step,
            LinkerBackend backend, BuildCache& cache) {
  Built built;
  const LinkFlags flags = link_flags(step);
  switch (scenario.builder) {
    case Builder::module:
      built.module = Module::load(inputs.front().code);
      break;
    case Builder::abi:
      built.log = check_abi_symbols(inputs);
      break;
    case Builder::reduce: {
      reduce::ReduceBuild reduction = build_reduction(scenario, inputs, step, cache);
      built.code = reduction.code;
      break;
    }
    case Builder::kernel: {
      KernelOptions options;
      options.link.arch = resolve_arch(step.arch);
      options.link.lto = step.lto;
      options.link.backend = backend;
      options.link.flags = flags;
      options.nrt = step.nrt;
      KernelBuilder kernel_builder(scenario.launch ? scenario.launch->kernel : scenario.name, options,
                                   cache);
      // Declarations first: the kernel's CUDA C++ is compiled with their header.
      for (const StepInput& input : inputs) {
        if (input.spec->declares) kernel_builder.declare(declared_function(*input.spec->declares, input.code));
      }
      for (const StepInput& input : inputs) {
        if (input.kernel_source) kernel_builder.source(input.code);
        else if (!input.spec->declares) kernel_builder.link(input.code);
      }
      const LinkedKernel linked = kernel_builder.link_cubin();
      built.code = linked.link.code;
      built.log = linked.link.info_log;
      break;
    }
    case Builder::graph:
    case Builder::linker: {
      LinkOptions options;
      options.arch = resolve_arch(step.arch);
      options.lto = step.lto;
      options.backend = backend;
      options.flags = flags;
      Linker linker(options, cache);
      for (const StepInput& input : inputs) {
        if (input.file) linker.add_file(*input.file);
        else linker.add(input.code);
      }
      const LinkResult result = linker.link();
      built.code = result.code;
      built.log = result.info_log;
      break;
    }
  }
  return built;
}

StepReport run_step(const Scenario& scenario, const Step& step, LinkerBackend backend, const fs::path& fixture_dir,
                    BuildCache& cache, std::vector<InputReport>& input_reports) {
  StepReport out;
  out.backend = backend;
  out.options = step.options;
  const NrtSwitch nrt_switch(step.options.nrt_global);
  try {
    const std::vector<StepInput> inputs = step_inputs(scenario, fixture_dir, step.options);
    if (input_reports.empty()) {
      for (const StepInput& input : inputs) {
        input_reports.push_back({input.code.name(), input.code.format(), input.code.bytes().size(),
                                 sha256_hex(input.code.bytes()), input.code.nrt()});
      }
    }
    Built built = build(scenario, inputs, step.options, backend, cache);
    out.log = built.log;
    std::vector<double> values;
    if (scenario.launch) {
      if (!built.module) built.module = Module::load(*built.code);
      const Kernel kernel = built.module->kernel(scenario.launch->kernel);
      out.launch_output = run_launch(*scenario.launch, kernel, values,
                                     scenario.builder == Builder::graph ? built.module : nullptr);
    }
    judge_success(out, step.expect, scenario.launch, built.code ? built.code->bytes() : Bytes{}, values);
  } catch (const ScenarioFileError&) {
    throw;  // the file is wrong: no verdict
  } catch (const Error& error) {
    judge_failure(out, error, step.expect, scenario.reported_failure);
  }
  return out;
}

}  // namespace

ScenarioReport run_scenario(const Scenario& scenario, const fs::path& fixture_dir) {
  // Only a file that uses a device asks for one: cuInit is not free, and a file of the
  // nvJitLink backend alone must run the same with or without a driver.
  const bool device = scenario.uses_device() && has_device();
  if (scenario.needs_device() && !device) {
    throw Error(ErrorKind::cuda, "scenario '" + scenario.name + "'",
                "needs a CUDA device (it launches, loads, or uses the driver linker): " + no_device_reason());
  }
  ScenarioReport report;
  report.name = scenario.name;
  report.reported = scenario.reported;
  report.reported_at = scenario.reported_at;
  report.cujit_behaviour = scenario.cujit_behaviour;
  report.found_here = scenario.found_here;
  report.environment = environment();

  CacheConfig cache_config;
  cache_config.mode = CacheMode::memory;  // shared by the steps, never by other runs
  BuildCache cache(cache_config);
  // A replayed failure is the scenario's own (expected, or the one it was captured from):
  // with CUJIT_CAPTURE_DIR still set (after `cujit repro --capture`, or a CI that sets it for
  // its whole run) it would otherwise be captured again, once per replay.
  const detail::CaptureSuppressed replaying;
  if (scenario.backend == BackendChoice::both && !device) {
    report.not_run.push_back({LinkerBackend::driver, "needs a device", no_device_reason()});
  }
  if (!scenario.driver_does_not_apply.empty()) {
    report.not_run.push_back({LinkerBackend::driver, "does not apply", scenario.driver_does_not_apply});
  }
  for (LinkerBackend backend : scenario.backends_runnable(device)) {
    for (const Step& step : scenario.steps) {
      StepReport out = run_step(scenario, step, backend, fixture_dir, cache, report.inputs);
      if (static_cast<int>(out.verdict) > static_cast<int>(report.verdict)) report.verdict = out.verdict;
      report.steps.push_back(std::move(out));
    }
  }
  return report;
}

}  // namespace cujit::scenarios
