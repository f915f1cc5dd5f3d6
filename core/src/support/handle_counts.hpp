#pragma once
// Bookkeeping behind cujit::live_handles(): each owner counts its handle in when it is
// created and out when it is released.

namespace cujit::detail {

enum class HandleKind { program, link_session, module, graph, graph_exec };

void handle_created(HandleKind kind) noexcept;
void handle_released(HandleKind kind) noexcept;

}  // namespace cujit::detail
