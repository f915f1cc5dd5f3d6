#pragma once
// PTX whose one name, in each field kind that holds a name, is as long as asked: the class
// of input behind red-team finding F18 (a 5,000,000-character name killed nvJitLink).

#include <cstddef>
#include <string>
#include <vector>

namespace cujit::test {

struct LongNamePtx {
  std::string field;  // which kind of name is long
  std::string ptx;
  bool links = true;  // false: the link must fail with an error (an undefined symbol)
};

// One PTX per field kind: .entry, .func (defined and called), .global, .extern (left
// undefined), parameter, label, register; the long name is `length` characters.
inline std::vector<LongNamePtx> long_name_ptx(std::size_t length) {
  const std::string head = ".version 8.0\n.target sm_90\n.address_size 64\n";
  const std::string name = "n" + std::string(length - 1, 'x');
  const std::string body = "{\n  ret;\n}\n";
  return {
      {"entry", head + ".visible .entry " + name + "()\n" + body},
      {"func", head + ".visible .func " + name + "()\n" + body + ".visible .entry k()\n{\n  call.uni " + name +
                   ", ();\n  ret;\n}\n"},
      {"global", head + ".visible .global .u32 " + name + ";\n.visible .entry k()\n" + body},
      {"extern", head + ".extern .global .u32 " + name + ";\n.visible .entry k()\n{\n  .reg .b64 %rd<2>;\n"
                     "  mov.u64 %rd1, " + name + ";\n  ret;\n}\n", false},
      {"parameter", head + ".visible .entry k(\n  .param .u64 " + name + "\n)\n" + body},
      {"label", head + ".visible .entry k()\n{\n" + name + ":\n  ret;\n}\n"},
      {"register", head + ".visible .entry k()\n{\n  .reg .b32 %" + name.substr(1) + ";\n  ret;\n}\n"},
  };
}

}  // namespace cujit::test
