// NVRTC is loaded on first use: a process that only hits the cache never maps it, a compile
// does, CUJIT_NVRTC_LIBRARY chooses the file, and a file that is not NVRTC is a typed error
// naming it. Each case runs nvrtc_child as a new process: what a process maps, and the
// library it loads once, are its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {
namespace fs = std::filesystem;

struct ChildAnswer {
  int exit_code = -1;
  std::map<std::string, std::string> values;  // the key=value lines
  std::string output;

  const std::string& operator[](const std::string& key) const {
    static const std::string missing = "<missing>";
    const auto found = values.find(key);
    return found == values.end() ? missing : found->second;
  }
};

ChildAnswer run_nvrtc_child(const std::vector<std::string>& args,
                            const std::vector<std::string>& environment = {}) {
  std::vector<std::string> argv{CUJIT_NVRTC_CHILD};
  argv.insert(argv.end(), args.begin(), args.end());
  const test::ChildResult child = test::run_child(argv, environment);
  ChildAnswer answer{child.exit_code, {}, child.output};
  std::istringstream lines(child.output);
  for (std::string line; std::getline(lines, line);) {
    const auto equals = line.find('=');
    if (equals != std::string::npos) answer.values[line.substr(0, equals)] = line.substr(equals + 1);
  }
  return answer;
}

std::string chosen(const fs::path& path) { return "CUJIT_NVRTC_LIBRARY=" + path.string(); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::string real_nvrtc = fs::canonical(CUJIT_TEST_NVRTC_LIBRARY).string();

TEST(NvrtcLibrary, ACompileMapsNvrtcAndADiskHitNeverDoes) {
  for (const char* mode : {"compile", "kernel"}) {
    test::TempDir dir;
    const std::string cache = (dir.path() / "cache").string();
    const ChildAnswer built = run_nvrtc_child({mode, cache});
    ASSERT_EQ(built.exit_code, 0) << built.output;
    EXPECT_EQ(built["source"], "built") << mode;
    EXPECT_EQ(built["mapped"], real_nvrtc) << mode << ": a compile loads NVRTC";

    const ChildAnswer hit = run_nvrtc_child({mode, cache});
    ASSERT_EQ(hit.exit_code, 0) << hit.output;
    EXPECT_EQ(hit["source"], "disk") << mode;
    EXPECT_EQ(hit["mapped"], "none") << mode << ": a cache hit needs no NVRTC";
  }
}

TEST(NvrtcLibrary, TheIdentityNamesTheBuildsLibraryAndItsBuiltins) {
  const ChildAnswer answer = run_nvrtc_child({"identity"});
  ASSERT_EQ(answer.exit_code, 0) << answer.output;
  EXPECT_EQ(answer["identity"].rfind("nvrtc: path=" + real_nvrtc + ";size=", 0), 0u) << answer.output;
  EXPECT_TRUE(contains(answer["identity"], "libnvrtc-builtins")) << answer.output;
  EXPECT_NE(answer["version"].find('.'), std::string::npos) << answer.output;
  EXPECT_EQ(answer["mapped"], real_nvrtc) << "the version is read from the library it names";
}

TEST(NvrtcLibrary, TheChosenLibraryIsTheOneLoadedAndNamed) {
  test::TempDir dir;
  // A link to the toolkit's file stands for another toolkit's: the key names the real file.
  const fs::path link = dir.path() / "libnvrtc.so.chosen";
  fs::create_symlink(real_nvrtc, link);
  for (const fs::path& path : {fs::path(real_nvrtc), link}) {
    const ChildAnswer compiled = run_nvrtc_child({"compile", "off"}, {chosen(path)});
    ASSERT_EQ(compiled.exit_code, 0) << compiled.output;
    EXPECT_EQ(compiled["source"], "built");
    EXPECT_EQ(compiled["mapped"], real_nvrtc) << path;

    const ChildAnswer named = run_nvrtc_child({"identity"}, {chosen(path)});
    ASSERT_EQ(named.exit_code, 0) << named.output;
    EXPECT_EQ(named["identity"].rfind("nvrtc: path=" + real_nvrtc + ";", 0), 0u) << named.output;
  }
}

// Every way CUJIT_NVRTC_LIBRARY can name something that is not NVRTC: a typed error from
// the component, naming the path and the loader's reason, in a process that carries on.
TEST(HostileNvrtcLibrary, APathThatIsNotNvrtcIsATypedErrorNamingIt) {
  test::TempDir dir;
  struct Case {
    fs::path path;
    const char* component;
    const char* reason;  // part of what the loader says
  };
  const std::vector<Case> cases{
      {dir.path() / "missing" / "libnvrtc.so.13", "NVRTC (dlopen)", "No such file"},
      {dir.write("libnvrtc.so.13", "not a shared library\n"), "NVRTC (dlopen)", ""},
      {dir.path(), "NVRTC (dlopen)", ""},
      {fs::path(CUJIT_TEST_NVJITLINK_LIBRARY), "NVRTC (dlsym)", "has no nvrtc"},
  };
  for (const Case& bad : cases) {
    const ChildAnswer answer = run_nvrtc_child({"compile", "off"}, {chosen(bad.path)});
    EXPECT_EQ(answer.exit_code, 3) << bad.path << "\n" << answer.output;
    EXPECT_EQ(answer["error-kind"], "unsupported") << answer.output;
    EXPECT_EQ(answer["error-component"], bad.component) << answer.output;
    EXPECT_TRUE(contains(answer["error"], "'" + bad.path.string() + "'")) << answer.output;
    EXPECT_TRUE(contains(answer["error"], "CUJIT_NVRTC_LIBRARY")) << answer.output;
    EXPECT_TRUE(contains(answer["error"], bad.reason)) << answer.output;
    EXPECT_NE(answer["mapped"], real_nvrtc) << "never the build's NVRTC instead";

    // Reports: the version says why it is unavailable; the identity of a file that is there
    // is that file's (no entry can exist under it: nothing compiled with it).
    const ChildAnswer reported = run_nvrtc_child({"identity"}, {chosen(bad.path)});
    if (reported.exit_code == 0) {
      EXPECT_EQ(reported["version"].rfind("unavailable (", 0), 0u) << reported.output;
      EXPECT_TRUE(contains(reported["version"], bad.path.string())) << reported.output;
    } else {
      EXPECT_EQ(reported.exit_code, 3) << reported.output;
      EXPECT_TRUE(contains(reported["error"], bad.path.string())) << reported.output;
    }
  }
}

TEST(HostileNvrtcLibrary, ARelativePathIsAUsageErrorNamingTheVariable) {
  const ChildAnswer answer = run_nvrtc_child({"compile", "off"}, {"CUJIT_NVRTC_LIBRARY=libnvrtc.so.13"});
  EXPECT_EQ(answer.exit_code, 3) << answer.output;
  EXPECT_EQ(answer["error-kind"], "usage") << answer.output;
  EXPECT_TRUE(contains(answer["error"], "CUJIT_NVRTC_LIBRARY='libnvrtc.so.13'")) << answer.output;
  EXPECT_EQ(answer["mapped"], "none") << answer.output;
}

}  // namespace
}  // namespace cujit
