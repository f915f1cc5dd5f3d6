#pragma once
// Testing seam of the nvJitLink session: a function called on the linking thread inside
// each nvJitLinkAddData / nvJitLinkComplete step, just before the call, while the step's
// stderr capture is active. Tests use it to hold one link inside its step while another
// runs (links must not wait for each other) and to see the bytes handed to nvJitLink (the
// input's own buffer, not a copy). Null in normal use; set it only while no link runs.
//
// Self-contained (standard headers only): conformance tests include it by its path.

#include <cstddef>

namespace cujit::detail {

// `call` is "nvJitLinkAddData" (with the input's bytes) or "nvJitLinkComplete" (data null,
// size 0); `context` is the pointer given with the hook.
using NvJitLinkStepHook = void (*)(const char* call, const void* data, std::size_t size,
                                   void* context);

void set_nvjitlink_step_hook(NvJitLinkStepHook hook, void* context) noexcept;

}  // namespace cujit::detail
