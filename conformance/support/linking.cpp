#include "support/linking.hpp"

#include "support/fixtures.hpp"

namespace cujit::test {

std::string_view to_string(Origin origin) { return origin == Origin::path ? "path" : "bytes"; }

FixtureInput fixture_input(const std::string& file) {
  const auto extension = std::filesystem::path(file).extension().string();
  return FixtureInput{file, format_from_extension(extension).value()};
}

std::filesystem::path input_path(const FixtureInput& input) {
  if (input.file.rfind("src:", 0) == 0) return scenario_path("fixtures/" + input.file.substr(4));
  return fixture_path(input.file);
}

void add_input(Linker& linker, const FixtureInput& input, Origin origin) {
  const auto path = input_path(input);
  if (origin == Origin::path) {
    linker.add_file(path);
  } else {
    linker.add_data(input.format, read_bytes(path), path.filename().string());
  }
}

LinkOptions link_options(LinkerBackend backend, bool lto, const std::string& arch) {
  LinkOptions options;
  options.arch = Arch::parse(arch);
  options.backend = backend;
  options.lto = lto;
  return options;
}

std::shared_ptr<Module> load_scenario_source(const std::string& relative, const std::string& name) {
  Linker linker(link_options(LinkerBackend::nvjitlink, false));
  linker.add_file(scenario_path(relative));
  return Module::load(LinkableCode::cubin(linker.link().code.bytes(), name));
}

std::vector<int> run_int_kernel(const Bytes& cubin, const std::string& kernel, unsigned threads,
                                const std::vector<int>& int_args) {
  auto module = Module::load(LinkableCode::cubin(cubin, kernel + ".cubin"));
  const Kernel k = module->kernel(kernel);
  DeviceBuffer out(threads * sizeof(int));
  out.fill_bytes(0xAB);  // poison: every checked element must be written
  const DevicePtr ptr = out.ptr();
  std::vector<KernelArg> args{arg(ptr)};
  for (const int& value : int_args) args.push_back(arg(value));
  LaunchConfig config;
  config.block.x = threads;
  k.launch(config, args);
  return out.to_vector<int>(threads);
}

std::string identifier(std::string text) {
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return text;
}

}  // namespace cujit::test
