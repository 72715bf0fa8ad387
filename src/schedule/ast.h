// Tempo's own schedule AST (TEMPO §5.3), converted from isl's AST: what the executor walks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/sdg.h"
#include "symbolic/expr.h"

namespace tempo::schedule {

// Evict / Load move one point of a swapped op output to host memory and back (TEMPO §5.2).
enum class StmtKind { Seq, For, If, Exec, Dealloc, Evict, Load };

struct Stmt;
using StmtPtr = std::shared_ptr<const Stmt>;

struct Stmt {
  StmtKind kind = StmtKind::Seq;
  std::vector<StmtPtr> body;       // Seq: statements; For: loop body; If: then-branch
  std::vector<StmtPtr> else_body;  // If: else-branch (may be empty)
  // For: `for (iterator = init; cond; iterator += step)`; cond is boolean in the iterator.
  Expr iterator, init, cond, step;
  // If: `cond` above.
  // Exec / Dealloc / Evict / Load: op (and output, but for Exec) at `point`, one expression per
  // domain dimension of the op, written in loop iterators and bounds.
  ir::OpId op = -1;
  int output = 0;
  std::vector<Expr> point;
  // Exec: the inputs (positions in the op's inputs) whose point the op takes over from its store
  // as the last reader (donate_buffers); the deallocation that follows then frees nothing.
  std::vector<int> donated;
};

// A computed schedule: the AST plus the loop iterators it introduces (as dimensions named c0, c1,
// ... with placeholder bounds, so that a SymbolLayout can give them slots).
struct Schedule {
  StmtPtr root;
  Dims iterators;
  int num_statements = 0;  // isl statements scheduled (ops or fused groups, and deallocations)
  bool fused = false;      // static islands were scheduled as one statement each
  bool bounded = false;    // with bounded lifetimes (see compute_schedule)
  bool from_cache = false;  // read back from the schedule cache (schedule/cache.h)
  std::vector<std::pair<ir::OpId, int>> swapped;  // op outputs evicted and loaded (ScheduleOptions)
  std::vector<ir::OpId> on_host;                  // ops whose outputs stay in host memory (Swap)
  std::string str(const ir::Graph& g) const;      // C-like pretty print, e.g. `for (c1 = 0; ...)`
};

}  // namespace tempo::schedule
