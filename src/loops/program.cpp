#include "loops/program.h"

#include <isl/ctx.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <isl/union_set.h>

#include <cctype>
#include <limits>
#include <set>

#include "symbolic/isl_bridge.h"
#include "util/error.h"

namespace tempo::loops {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t k = 0; k < v.size(); ++k) out += (k ? sep : "") + v[k];
  return out;
}

std::string tuple(const Statement& s) {
  return cat(s.name, "[", join(s.vars, ","), "]");
}

std::string accesses(const Statement& s, const std::vector<std::string>& list) {
  std::vector<std::string> pieces;
  for (const std::string& a : list) pieces.push_back(cat(tuple(s), " -> ", a));
  return "{ " + join(pieces, "; ") + " }";
}

std::string union_of(const Program& p, std::string Statement::*field) {
  std::vector<std::string> pieces;
  for (const Statement& s : p.statements) {
    std::string str = s.*field;
    auto open = str.find('{'), close = str.rfind('}');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::string inner = str.substr(open + 1, close - open - 1);
    if (inner.find_first_not_of(" \t\n") != std::string::npos) pieces.push_back(inner);
  }
  return "{ " + join(pieces, "; ") + " }";
}

}  // namespace

const Statement& Program::statement(const std::string& n) const {
  for (const Statement& s : statements)
    if (s.name == n) return s;
  throw UserError(cat("program ", name, " has no statement `", n, "`"));
}

std::vector<std::string> Program::written_arrays() const {
  std::vector<std::string> out;
  for (const Array& a : arrays)
    for (const Statement& s : statements)
      if (s.writes.find(" " + a.name + "[") != std::string::npos) {
        out.push_back(a.name);
        break;
      }
  return out;
}

std::string Program::domains() const {
  return union_of(*this, &Statement::domain);
}
std::string Program::reads() const {
  return union_of(*this, &Statement::reads);
}
std::string Program::writes() const {
  return union_of(*this, &Statement::writes);
}

void Program::validate() const {
  if (statements.empty()) throw UserError(cat("program ", name, " has no statements"));
  std::set<std::string> names;
  for (const Array& a : arrays) {
    if (!is_identifier(a.name) || !names.insert(a.name).second)
      throw UserError(cat("program ", name, ": bad or duplicate array name `", a.name, "`"));
    if (a.sizes.empty())
      throw UserError(cat("program ", name, ": array ", a.name, " has no sizes"));
    // The generated C declares each array as doubles: its byte size must fit in 64 bits.
    int64_t elements = 1;
    for (int64_t n : a.sizes) {
      if (n <= 0) throw UserError(cat("program ", name, ": array ", a.name, " has a size <= 0"));
      if (elements > std::numeric_limits<int64_t>::max() / 8 / n)
        throw UserError(cat("program ", name, ": array ", a.name, " is too large to allocate"));
      elements *= n;
    }
  }
  const sym::IslContext isl;
  isl_ctx* ctx = isl.get();
  std::string problem;
  for (const Statement& s : statements) {
    if (!is_identifier(s.name) || !names.insert(s.name).second) {
      problem = cat("bad or duplicate statement name `", s.name, "`");
      break;
    }
    if (s.schedule.size() != 2 * s.vars.size() + 1) {
      problem = cat("statement ", s.name, " needs a 2d+1 schedule of ", 2 * s.vars.size() + 1,
                    " rows, not ", s.schedule.size());
      break;
    }
    isl_set* d = isl_set_read_from_str(ctx, s.domain.c_str());
    if (!d) problem = cat("statement ", s.name, ": domain `", s.domain, "` does not parse");
    isl_set_free(d);
    for (const std::string* m : {&s.reads, &s.writes}) {
      isl_union_map* u = isl_union_map_read_from_str(ctx, m->c_str());
      if (!u) problem = cat("statement ", s.name, ": access `", *m, "` does not parse");
      isl_union_map_free(u);
    }
    if (!problem.empty()) break;
  }
  if (!problem.empty()) throw UserError(cat("program ", name, ": ", problem));
}

ProgramBuilder& ProgramBuilder::array(const std::string& name, std::vector<int64_t> sizes) {
  p_.arrays.push_back({name, std::move(sizes)});
  return *this;
}

ProgramBuilder& ProgramBuilder::statement(const std::string& name, std::vector<std::string> vars,
                                          const std::string& constraints, const std::string& body,
                                          const std::vector<std::string>& reads,
                                          const std::vector<std::string>& writes,
                                          std::vector<std::string> schedule) {
  Statement s;
  s.name = name;
  s.vars = std::move(vars);
  s.domain = cat("{ ", tuple(s), " : ", constraints, " }");
  s.body = body;
  s.reads = accesses(s, reads);
  s.writes = accesses(s, writes);
  s.schedule = std::move(schedule);
  p_.statements.push_back(std::move(s));
  return *this;
}

Program ProgramBuilder::build() const {
  p_.validate();
  return p_;
}

}  // namespace tempo::loops
