// `tempo expr`: inspect symbolic expressions from the command line.
#include <algorithm>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "symbolic/eval.h"
#include "symbolic/invert.h"
#include "symbolic/isl_bridge.h"
#include "symbolic/parse.h"
#include "symbolic/simplify.h"
#include "util/error.h"

namespace {

using tempo::UserError;
using tempo::sym::Dims;
using tempo::sym::Expr;

const char* kUsage =
    "usage: tempo expr <action> EXPR [EXPR] [options]\n"
    "\n"
    "actions:\n"
    "  simplify EXPR --dims D              range-aware simplification\n"
    "  condition COND --dims D             simplify a condition through isl (t%5==0 && t%3==0 -> t % 15 == 0)\n"
    "  invert PHI --sink D --source D      which sink points read a source point (TEMPO section 3);\n"
    "                                      a second line `when C` says where it holds if not everywhere\n"
    "  isl PHI --sink D --source D [--cond C]   the dependence as an isl map sink -> source\n"
    "  equal A B --dims D                  `true` if A and B agree at every point of the dims, else `false`\n"
    "  eval EXPR --dims D --at t=3,T=10    evaluate at one point\n"
    "\n"
    "options:\n"
    "  --dims D      dimensions as var:Bound pairs, e.g. t:T or b:B,i:I,t:T\n"
    "  --sink D      domain of the op that reads (default: --dims)\n"
    "  --source D    domain of the op that is read (default: the sink's)\n"
    "  --cond C      condition under which the edge is active (isl)\n"
    "  --at VALUES   symbol values for eval, e.g. t=3,T=10\n"
    "\n"
    "Expressions use the printed form: + - * // % min(...) max(...) == != < <= > >= && || !,\n"
    "slices start:stop[:step] and sequences [a, b:c]. Results print in the same form.\n"
    "\n"
    "examples:\n"
    "  tempo expr simplify \"min(t+5, T) - t\" --dims t:T\n"
    "  tempo expr invert \"max(0,t-3):t+1\" --sink t:T --source t:T\n"
    "  tempo expr isl \"t:min(t+3,T)\" --sink t:T --source t:T\n"
    "  tempo expr equal \"min(t+4,T)\" \"min(T,4+t)\" --dims t:T\n";

// Thrown for a malformed command line (exit status 2, as opposed to 1 for a bad expression).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string action;
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;
  bool help = false;

  std::optional<std::string> opt(const std::string& name) const {
    auto it = options.find(name);
    if (it == options.end()) return std::nullopt;
    return it->second;
  }
};

Args parse_args(int argc, char** argv) {
  static const char* kOptions[] = {"dims", "sink", "source", "cond", "at"};
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--help" || s == "-h") {
      a.help = true;
      continue;
    }
    if (s.rfind("--", 0) == 0) {
      std::string name = s.substr(2), value;
      size_t eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      } else {
        if (i + 1 >= argc) throw UsageError("option --" + name + " needs a value");
        value = argv[++i];
      }
      bool known = false;
      for (const char* o : kOptions) known = known || name == o;
      if (!known) throw UsageError("unknown option --" + name);
      a.options[name] = value;
      continue;
    }
    if (a.action.empty())
      a.action = s;
    else
      a.positional.push_back(s);
  }
  return a;
}

Dims dims_option(const Args& a, const std::string& name) {
  auto v = a.opt(name);
  if (!v || v->empty()) return {};
  return tempo::sym::parse_dims(*v);
}

void need_positional(const Args& a, size_t n) {
  if (a.positional.size() != n)
    throw UsageError("`tempo expr " + a.action + "` takes " + std::to_string(n) + " expression" +
                     (n == 1 ? "" : "s") + ", got " + std::to_string(a.positional.size()));
}

// Values "t=3,T=10" into the layout's slots.
std::vector<int64_t> parse_at(const std::string& text, const tempo::sym::SymbolLayout& layout) {
  std::vector<int64_t> env(layout.num_slots(), 0);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(pos, comma - pos);
    size_t eq = item.find('=');
    if (eq == std::string::npos) throw UserError("bad value `" + item + "` in --at: expected name=integer");
    std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    int slot = -1;
    for (const auto& d : layout.dims()) {
      if (d.var.name() == name) slot = layout.slot(d.var);
      if (d.bound.name() == name) slot = layout.slot(d.bound);
    }
    if (slot < 0) throw UserError("--at names `" + name + "`, which is no variable or bound of --dims");
    try {
      size_t used = 0;
      env[slot] = std::stoll(value, &used);
      if (used != value.size()) throw std::invalid_argument(value);
    } catch (const std::exception&) {
      throw UserError("bad value `" + value + "` for " + name + " in --at: expected an integer");
    }
    pos = comma + 1;
  }
  return env;
}

std::string range_str(const tempo::sym::IndexRange& r) {
  std::ostringstream os;
  os << r.start;
  if (!r.point) {
    os << ':' << r.stop;
    if (r.step != 1) os << ':' << r.step;
  }
  return os.str();
}

int run(const Args& a, std::ostream& os) {
  namespace sym = tempo::sym;
  const std::string& act = a.action;
  Dims dims = dims_option(a, "dims");

  if (act == "simplify" || act == "condition") {
    need_positional(a, 1);
    Expr e = sym::parse(a.positional[0], dims);
    os << (act == "simplify" ? sym::simplify(e, dims) : sym::simplify_condition(e, dims)) << "\n";
    return 0;
  }
  if (act == "equal") {
    need_positional(a, 2);
    Expr x = sym::parse(a.positional[0], dims), y = sym::parse(a.positional[1], dims);
    os << (sym::logically_equal(x, y, dims) ? "true" : "false") << "\n";
    return 0;
  }
  if (act == "invert" || act == "isl") {
    need_positional(a, 1);
    Dims sink = a.opt("sink") ? dims_option(a, "sink") : dims;
    Dims source = a.opt("source") ? dims_option(a, "source") : sink;
    if (!a.opt("sink") && !a.opt("dims")) throw UsageError("`tempo expr " + act + "` needs --sink (or --dims)");
    Dims all = sink;
    for (const auto& d : source)
      if (std::find(all.begin(), all.end(), d) == all.end()) all.push_back(d);
    Expr phi = sym::parse(a.positional[0], all);
    if (act == "invert") {
      sym::Inversion r = sym::invert_when(phi, sink, source);
      os << r.inverse << "\n";
      if (!(r.when.is_bool_const() && r.when.value())) os << "when " << r.when << "\n";
      return 0;
    }
    Expr cond;
    if (auto c = a.opt("cond")) cond = sym::parse(*c, sink);
    sym::IslContext ctx;
    os << sym::edge_to_isl(ctx, "sink", sink, "source", source, phi, cond) << "\n";
    return 0;
  }
  if (act == "eval") {
    need_positional(a, 1);
    auto at = a.opt("at");
    if (!at) throw UsageError("`tempo expr eval` needs --at, e.g. --at t=3,T=10");
    Expr e = sym::parse(a.positional[0], dims);
    sym::SymbolLayout layout(dims);
    std::vector<int64_t> env = parse_at(*at, layout);
    if (e.type() == sym::Type::Int || e.type() == sym::Type::Bool) {
      int64_t v = sym::CompiledExpr(e, layout).eval(env.data());
      if (e.type() == sym::Type::Bool)
        os << (v ? "true" : "false") << "\n";
      else
        os << v << "\n";
      return 0;
    }
    sym::CompiledSeq cs(e, layout);
    std::vector<sym::IndexRange> out(cs.size());
    cs.eval(env.data(), out.data());
    if (!e.is_seq()) {
      os << range_str(out[0]) << "\n";
      return 0;
    }
    os << "[";
    for (size_t i = 0; i < out.size(); ++i) os << (i ? ", " : "") << range_str(out[i]);
    os << "]\n";
    return 0;
  }
  if (act.empty()) throw UsageError("missing action (try `tempo expr --help`)");
  throw UsageError("unknown action `" + act + "` (try `tempo expr --help`)");
}

}  // namespace

int expr_command(int argc, char** argv, std::ostream& out, std::ostream& err) {
  try {
    Args a = parse_args(argc, argv);
    if (a.help) {
      out << kUsage;
      return 0;
    }
    return run(a, out);
  } catch (const UsageError& e) {
    err << "tempo: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (char& ch : msg)
      if (ch == '\n') ch = ' ';
    err << "tempo: error: " << msg << "\n";
    return 1;
  }
}

int run_expr_command(int argc, char** argv) {
  return expr_command(argc, argv, std::cout, std::cerr);
}
