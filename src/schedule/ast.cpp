// Pretty printing of the schedule AST.
#include "schedule/ast.h"

#include <sstream>
#include <string>

#include "util/error.h"

namespace tempo::schedule {
namespace {

std::string label(const ir::Graph& g, ir::OpId id) {
  if (id < 0 || static_cast<size_t>(id) >= g.num_ops()) return cat("op#", id);
  const ir::OpNode& op = g.op(id);
  std::string kind = ir::op_kind_name(op.kind);
  if (op.name.empty()) return cat(kind, "#", id);
  return cat(op.name, "#", id, " (", kind, ")");
}

std::string point_str(const std::vector<Expr>& point) {
  std::string s = "[";
  for (size_t k = 0; k < point.size(); ++k) s += (k ? ", " : "") + point[k].str();
  return s + "]";
}

void print(const ir::Graph& g, const StmtPtr& s, int depth, std::ostringstream& os) {
  std::string pad(2 * depth, ' ');
  switch (s->kind) {
    case StmtKind::Seq:
      for (const auto& b : s->body) print(g, b, depth, os);
      break;
    case StmtKind::For: {
      const std::string it = s->iterator.str();
      os << pad << "for (" << it << " = " << s->init.str() << "; " << s->cond.str() << "; " << it
         << " += " << s->step.str() << ") {\n";
      for (const auto& b : s->body) print(g, b, depth + 1, os);
      os << pad << "}\n";
      break;
    }
    case StmtKind::If:
      os << pad << "if (" << s->cond.str() << ") {\n";
      for (const auto& b : s->body) print(g, b, depth + 1, os);
      if (!s->else_body.empty()) {
        os << pad << "} else {\n";
        for (const auto& b : s->else_body) print(g, b, depth + 1, os);
      }
      os << pad << "}\n";
      break;
    case StmtKind::Exec:
      os << pad << "exec " << label(g, s->op) << " " << point_str(s->point);
      for (size_t k = 0; k < s->donated.size(); ++k)
        os << (k ? ", " : " takes in ") << s->donated[k];
      os << "\n";
      break;
    case StmtKind::Dealloc:
    case StmtKind::Evict:
    case StmtKind::Load:
      os << pad
         << (s->kind == StmtKind::Dealloc ? "dealloc "
             : s->kind == StmtKind::Evict ? "evict "
                                          : "load ")
         << label(g, s->op);
      if (s->output != 0) os << " out " << s->output;
      os << " " << point_str(s->point) << "\n";
      break;
  }
}

}  // namespace

std::string Schedule::str(const ir::Graph& g) const {
  std::ostringstream os;
  if (root) print(g, root, 0, os);
  return os.str();
}

}  // namespace tempo::schedule
