// Kill points: named places inside the engine's write paths (a write
// logged, each step of a checkpoint, of a distribute, of the stash copy's
// update and of a drain of the write buffer;
// tests/engine/table_crash_test.cc names them all) where a
// crash test may end the process, to prove that recovery handles a crash
// exactly there. Without a handler (always, outside tests) a kill point is
// one load and a branch.
//
// Thread-safety: set the handler before any table is opened.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_KILL_POINTS_H_
#define ROUNDTABLE_ENGINE_INTERNAL_KILL_POINTS_H_

#include <string_view>

namespace roundtable::internal {

using KillHandler = void (*)(std::string_view point);

inline KillHandler& KillHandlerSlot() {
  static KillHandler handler = nullptr;
  return handler;
}

// Installs `handler` (null removes it); it is called with the name of every
// kill point reached.
inline void SetKillHandler(KillHandler handler) { KillHandlerSlot() = handler; }

inline void KillPoint(std::string_view point) {
  if (KillHandler handler = KillHandlerSlot()) handler(point);
}

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_KILL_POINTS_H_
