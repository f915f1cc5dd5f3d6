#pragma once
// Scenario files: a reported bug as data (docs/scenario-format.md). load_scenario() reads a
// file once, checks every field, and returns a typed Scenario; nothing after it reads
// JSON. Nothing is compiled or linked here: input files named by "path" or "fixture" are
// read when the scenario runs (scenario_run.hpp).
//
// A scenario compiles and links code: it is as trusted as code. What a file can reach is
// still confined: a scenario file is read only if it is a regular file of at most
// max_scenario_file_bytes; every field is checked for its type and range, unknown fields
// are refused; input files stay inside the scenario file's directory and the fixture set
// unless LoadOptions::allow_paths_outside says otherwise.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cujit/abi.hpp"
#include "cujit/error.hpp"
#include "cujit/format.hpp"
#include "cujit/linkable_code.hpp"
#include "cujit/linker.hpp"
#include "cujit/module.hpp"
#include "cujit/signature.hpp"

namespace cujit::scenarios {

// Error(usage) from component "scenario file", naming the file: every defect of a file,
// found when it is loaded or, for the input files it names, when it runs.
// A scenario file that is wrong (not a build that failed): Error(usage) from "scenario
// file", a type of its own so that the runner tells it from a verdict without reading text.
class ScenarioFileError : public Error {
 public:
  ScenarioFileError(const std::filesystem::path& file, const std::string& what)
      : Error(ErrorKind::usage, "scenario file", "'" + file.string() + "': " + what) {}

 protected:
  std::unique_ptr<Error> clone() const override { return std::make_unique<ScenarioFileError>(*this); }
  [[noreturn]] void raise() const override { throw *this; }
};

[[noreturn]] void fail_scenario_file(const std::filesystem::path& file, const std::string& what);

enum class Builder {
  linker,  // a Linker over the inputs
  kernel,  // a KernelBuilder: "source" inputs are the kernel's code, "declares" inputs
           // declared functions' code, the others link items
  module,  // Module::load of the first input, no link
  abi,     // cujit::abi compiles the "abi" inputs; every other PTX or cubin input must
           // define the symbols they get (names cujit and another compiler agree on)
  reduce,  // cujit::reduce::build_reduce of the "reduce" spec; a "declares" input is its
           // operator
  graph,   // linked as by the linker builder, then the launch is captured into a CUDA
           // graph, instantiated and launched (needs "launch")
};
enum class BackendChoice { nvjitlink, driver, both };

struct StepOptions {
  // "device" (the device's own) or a name Arch::parse reads; resolved when the step runs,
  // so that an arch the toolkit rejects is that step's outcome.
  std::string arch = "sm_90";
  bool lto = false;
  // Typed link flags (LinkFlags): both backends get them, or refuse them by name.
  bool debug = false;     // LinkFlags::debug: -G for NVRTC, -g / CU_JIT_GENERATE_DEBUG_INFO
  bool lineinfo = false;  // LinkFlags::line_info
  std::optional<unsigned> max_registers;       // 1 to 255
  std::optional<unsigned> optimization_level;  // 0 to 3
  std::optional<bool> ftz, prec_div, prec_sqrt, fma;
  std::optional<bool> nrt;         // the per-kernel override
  std::optional<bool> nrt_global;  // the global switch for this step; unset: unchanged
};

// An error to match: either field empty matches anything.
struct ErrorMatch {
  std::optional<ErrorKind> kind;
  std::string message;  // a substring of what()
};

struct Expectation {
  bool success = true;
  ErrorMatch error;             // when !success
  std::optional<int> cubin_sm;  // when success: the cubin's architecture
};

struct Step {
  StepOptions options;
  Expectation expect;
};

// Where an input's bytes come from.
struct InputFile {
  std::filesystem::path path;  // resolved against the scenario file's directory
};
struct InputFixture {
  std::string name;  // a fixture the build made, in the run's fixture directory
};
struct InputInline {
  std::string text;
};
struct InputAbi {  // a device function compiled by cujit::abi for the step's arch
  std::string name;
  Signature signature;
  std::vector<std::string> params;
  std::string body;
  abi::Abi abi = abi::Abi::c;
  std::optional<std::string> abi_name;
  CompileTarget output = CompileTarget::ltoir;
};

// A function an input defines, declared to the kernel (DeclaredFunction) or given to the
// reduce builder as its operator.
struct Declaration {
  std::string name;
  std::string module = "__main__";
  Signature signature;
  abi::Abi abi = abi::Abi::numba;
  std::optional<std::string> abi_name;
};

struct Patch {
  std::size_t offset = 0;
  std::string bytes;  // decoded from the file's hex
};

enum class Origin {
  file,   // Linker::add_file / LinkableCode::from_path
  bytes,  // the bytes read here, added as data
};

struct Input {
  std::string field;  // where it is in the file, "inputs[2]", for messages
  std::variant<InputFile, InputFixture, InputInline, InputAbi> source;
  std::optional<Format> format;     // required when the input is added as bytes
  std::optional<std::string> name;  // unset: the file name, or none
  Origin origin = Origin::file;
  std::vector<Patch> patches;       // non-empty implies Origin::bytes
  bool nrt = false;
  bool kernel_source = false;       // "role": "source"
  std::optional<Declaration> declares;  // "declares": the function this input defines
};

struct OutputArg {  // a poisoned output buffer, read back after the launch
  Type type;
  std::size_t count = 1;
};
struct ScalarArg {
  Type type;
  ArgValue value;  // converted when loaded
};
using LaunchArg = std::variant<OutputArg, ScalarArg>;

struct ExpectedValue {
  double value = 0;
  std::string text;  // as the file wrote it, for messages
};

struct Launch {
  std::string kernel;
  Dim3 grid, block;
  std::vector<LaunchArg> args;
  std::vector<ExpectedValue> expect;  // the last output buffer's values
};

// The reduce builder's spec: types and a built-in operator (or the "declares" input's).
struct ReduceSpecFile {
  Type input = Type::parse("int32");
  Type output = Type::parse("int32");
  Type accumulator = Type::parse("int32");
  std::string op = "sum";  // sum, min, max, or "declared"
};

// The upstream stacks a replay may be written for (scenario_replay.hpp probes them).
inline constexpr const char* replay_stacks[] = {"numba-cuda", "cuda.core", "cupy"};

// A small program in an upstream stack's own API that reproduces the reported case and
// prints its outcome (docs/scenario-format.md, "Replays").
struct Replay {
  std::string field;              // "replays[0]", for messages
  std::string stack;              // one of replay_stacks
  std::filesystem::path program;  // resolved and confined as a "path" input
  std::string reported_outcome;   // the outcome the report described: "reproduced"
  std::string fixed_outcome;      // the outcome once the stack handles the case: "fixed"
  // Non-empty: the stack cannot express the case, and this says why; no program, no outcomes.
  std::string does_not_apply;
};

struct Scenario {
  std::filesystem::path file;
  std::string name;
  std::string reported;         // what was reported upstream
  std::string reported_at;      // where: "owner/repository#N" or an https URL; may be empty
  std::string found_here;       // no upstream report: what cujit's own work found
  std::string cujit_behaviour;  // what cujit does
  std::vector<Replay> replays;  // at most one per stack
  Builder builder = Builder::linker;
  BackendChoice backend = BackendChoice::nvjitlink;
  // Why the driver backend cannot run this case (LTO-IR inputs, no link at all); only in a
  // file that runs nvJitLink alone. The verdict table says "does not apply" with it.
  std::string driver_does_not_apply;
  std::vector<Input> inputs;                // non-empty
  std::vector<Step> steps;                  // non-empty; one when the file has no "steps"
  std::optional<Launch> launch;
  std::optional<ErrorMatch> reported_failure;
  std::optional<ReduceSpecFile> reduce;  // the reduce builder's spec

  // Where input files may be (canonical): the scenario file's directory, then
  // LoadOptions::input_roots. Fixtures must be inside the run's fixture directory.
  std::vector<std::filesystem::path> input_roots;
  bool allow_paths_outside = false;  // LoadOptions::allow_paths_outside

  // Nothing of the file runs without a device: a launch, a module load, or the driver
  // backend alone.
  bool needs_device() const noexcept;
  // Something of the file runs on a device when there is one: needs_device(), or the
  // driver half of a "both" file (without a device, only its nvJitLink half runs).
  bool uses_device() const noexcept;
  // The backends that run here: backends() without the driver when there is no device.
  std::vector<LinkerBackend> backends_runnable(bool device) const;
  // The backends every step runs through, in order.
  std::vector<LinkerBackend> backends() const;
};

// The largest scenario file load_scenario reads (inline inputs included).
inline constexpr std::uint64_t max_scenario_file_bytes = std::uint64_t{8} << 20;
// The largest input file a scenario reads (LinkableCode's limit); patch offsets are below it.
inline constexpr std::uint64_t max_input_file_bytes = LinkableCode::max_file_bytes;
// The largest output buffer a launch allocates.
inline constexpr std::uint64_t max_output_bytes = std::uint64_t{256} << 20;

// The committed fixture sources this library was built with (scenarios/fixtures), which
// the files in scenarios/repro name as "../fixtures/...".
std::filesystem::path committed_fixture_sources();

// The directories of CUJIT_SCENARIO_PATH (colon-separated, empty entries skipped): fixture
// sets a user names for scenarios kept elsewhere.
std::vector<std::filesystem::path> scenario_path_from_environment();

// The directories of a scenario set beside the scenario file's directory D: D/../fixtures
// and D/../replays (a checkout's scenarios/ layout: repro/, fixtures/, replays/), each
// only when it is a real directory, not a symlink, so that a scenario from anywhere
// finds the set it came with and nothing else.
std::vector<std::filesystem::path> scenario_set_roots(const std::filesystem::path& scenario_dir);

struct LoadOptions {
  // Directories, besides the scenario file's own and its scenario set's
  // (scenario_set_roots), whose files "path" inputs and replay programs may name: the
  // build's fixture set and CUJIT_SCENARIO_PATH. A directory that does not exist is ignored.
  std::vector<std::filesystem::path> input_roots = [] {
    std::vector<std::filesystem::path> roots = scenario_path_from_environment();
    roots.insert(roots.begin(), committed_fixture_sources());
    return roots;
  }();
  // false (the default): a "path" input is relative and resolves, ".." and symlinks
  // followed, inside the scenario file's directory or one of input_roots; a "fixture" is a
  // relative name without ".." that resolves inside the run's fixture directory. Anything
  // else is a ScenarioFileError naming the field. true: any file the process can read
  // (absolute paths, ".." and symlinks leading anywhere): for scenario files one trusts.
  bool allow_paths_outside = false;
};

// Reads and checks the whole file; throws ScenarioFileError (Error(usage) from "scenario
// file") naming the file and the field's JSON path ("steps[1].options.lto").
Scenario load_scenario(const std::filesystem::path& path, const LoadOptions& options = {});

// The file an input names ("path" or "fixture"; empty for the others), checked again just
// before it is read, against the scenario's input roots or `fixture_dir`: the load-time
// check cannot see files that change afterwards. Throws ScenarioFileError naming the field.
std::filesystem::path input_file_path(const Scenario& scenario, const Input& input,
                                      const std::filesystem::path& fixture_dir);

}  // namespace cujit::scenarios
