#include "schedule/cache.h"

#include <dlfcn.h>
#include <isl/version.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "symbolic/parse.h"
#include "util/error.h"
#include "util/hash.h"

namespace tempo::schedule {
namespace {

namespace fs = std::filesystem;

// Bump when the text form changes.
constexpr const char* kFormat = "tempo-schedule 1";

constexpr StmtKind kKinds[] = {StmtKind::Seq,     StmtKind::For,   StmtKind::If,  StmtKind::Exec,
                               StmtKind::Dealloc, StmtKind::Evict, StmtKind::Load};

const char* kind_word(StmtKind k) {
  switch (k) {
    case StmtKind::Seq: return "seq";
    case StmtKind::For: return "for";
    case StmtKind::If: return "if";
    case StmtKind::Exec: return "exec";
    case StmtKind::Dealloc: return "dealloc";
    case StmtKind::Evict: return "evict";
    case StmtKind::Load: return "load";
  }
  return "?";
}

template <typename T>
std::string joined(const std::vector<T>& xs) {
  std::string s;
  for (size_t k = 0; k < xs.size(); ++k) {
    if (k) s += ',';
    s += std::to_string(xs[k]);
  }
  return s;
}

void collect_symbols(const Expr& e, std::map<std::string, bool>& symbols) {
  if (!e.defined()) return;
  for (const Expr& s : sym::free_symbols(e)) symbols[s.name()] = s.is_bound_symbol();
}

void write(const StmtPtr& s, std::ostream& os, std::map<std::string, bool>& symbols) {
  os << kind_word(s->kind);
  auto expr = [&](const Expr& e) {
    collect_symbols(e, symbols);
    os << '\t' << e.str();
  };
  switch (s->kind) {
    case StmtKind::Seq:
      os << '\t' << s->body.size() << '\n';
      break;
    case StmtKind::For:
      expr(s->iterator), expr(s->init), expr(s->cond), expr(s->step);
      os << '\t' << s->body.size() << '\n';
      break;
    case StmtKind::If:
      expr(s->cond);
      os << '\t' << s->body.size() << '\t' << s->else_body.size() << '\n';
      break;
    case StmtKind::Exec:
    case StmtKind::Dealloc:
    case StmtKind::Evict:
    case StmtKind::Load:
      os << '\t' << s->op << '\t' << s->output << '\t' << joined(s->donated);
      for (const Expr& p : s->point) expr(p);
      os << '\n';
      break;
  }
  for (const StmtPtr& b : s->body) write(b, os, symbols);
  for (const StmtPtr& b : s->else_body) write(b, os, symbols);
}

std::vector<std::string> fields(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string::size_type from = 0;
  for (;;) {
    const auto at = line.find(sep, from);
    out.push_back(line.substr(from, at - from));
    if (at == std::string::npos) return out;
    from = at + 1;
  }
}

// Reads the text form back, line by line.
class Reader {
 public:
  explicit Reader(const std::string& text) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines_.push_back(line);
  }

  Schedule read() {
    Schedule s;
    const auto head = fields(next(), ' ');
    expect(head.size() == 4 && head[0] == "schedule", "a `schedule N fused bounded` line");
    s.num_statements = integer(head[1]);
    s.fused = head[2] == "1";
    s.bounded = head[3] == "1";
    if (const std::string its = after("iterators "); !its.empty())
      s.iterators = sym::parse_dims(its);
    for (const Dim& d : s.iterators) dims_.push_back(d);
    for (const std::string& f : fields(after("symbols "), ',')) {
      if (f.size() < 3 || f[f.size() - 2] != ':') continue;  // "t:v" or "T:b"
      // A symbol outside the iterators: a dimension whose other half no text can name.
      const std::string name = f.substr(0, f.size() - 2);
      dims_.push_back(f.back() == 'b' ? Dim("$" + name, name) : Dim(name, "$" + name));
    }
    for (const std::string& f : fields(after("swapped "), ',')) {
      if (f.empty()) continue;
      const auto op_out = fields(f, ':');
      expect(op_out.size() == 2, "op:output pairs");
      s.swapped.emplace_back(integer(op_out[0]), integer(op_out[1]));
    }
    for (const std::string& f : fields(after("on_host "), ','))
      if (!f.empty()) s.on_host.push_back(integer(f));
    expect(at_ < lines_.size(), "the statements or `none`");
    if (lines_[at_] == "none") {
      ++at_;
    } else {
      s.root = statement();
    }
    expect(at_ == lines_.size(), "the end of the schedule");
    return s;
  }

 private:
  StmtPtr statement() {
    const auto f = fields(next(), '\t');
    auto s = std::make_shared<Stmt>();
    const auto kind = std::find_if(std::begin(kKinds), std::end(kKinds),
                                   [&](StmtKind k) { return f[0] == kind_word(k); });
    expect(kind != std::end(kKinds), "a statement kind");
    s->kind = *kind;
    size_t body = 0, else_body = 0;
    switch (s->kind) {
      case StmtKind::Seq:
        expect(f.size() == 2, "seq N");
        body = count(f[1]);
        break;
      case StmtKind::For:
        expect(f.size() == 6, "for iterator init cond step N");
        s->iterator = expr(f[1]), s->init = expr(f[2]), s->cond = expr(f[3]);
        s->step = expr(f[4]);
        body = count(f[5]);
        break;
      case StmtKind::If:
        expect(f.size() == 4, "if cond N M");
        s->cond = expr(f[1]);
        body = count(f[2]), else_body = count(f[3]);
        break;
      default:
        expect(f.size() >= 4, "kind op output donated point...");
        s->op = integer(f[1]);
        s->output = integer(f[2]);
        for (const std::string& d : fields(f[3], ','))
          if (!d.empty()) s->donated.push_back(integer(d));
        for (size_t k = 4; k < f.size(); ++k) s->point.push_back(expr(f[k]));
        break;
    }
    for (size_t k = 0; k < body; ++k) s->body.push_back(statement());
    for (size_t k = 0; k < else_body; ++k) s->else_body.push_back(statement());
    return s;
  }

  const std::string& next() {
    expect(at_ < lines_.size(), "more lines");
    return lines_[at_++];
  }
  std::string after(const std::string& prefix) {
    const std::string& line = next();
    expect(line.rfind(prefix, 0) == 0, "a line starting `" + prefix + "`");
    return line.substr(prefix.size());
  }
  Expr expr(const std::string& text) { return sym::parse(text, dims_); }
  int integer(const std::string& text) {
    try {
      size_t used = 0;
      const int v = std::stoi(text, &used);
      if (used == text.size()) return v;
    } catch (const std::exception&) {
    }
    expect(false, "an integer");
    return 0;
  }
  size_t count(const std::string& text) {
    const int n = integer(text);
    expect(n >= 0 && static_cast<size_t>(n) <= lines_.size(), "a statement count");
    return static_cast<size_t>(n);
  }
  void expect(bool ok, const std::string& what) const {
    if (!ok)
      throw UserError(cat("schedule text, line ", at_, ": expected ", what,
                          at_ > 0 && at_ <= lines_.size() ? cat(" in `", lines_[at_ - 1], "`")
                                                           : std::string()));
  }

  std::vector<std::string> lines_;
  size_t at_ = 0;
  Dims dims_;
};

// The file this code was loaded from (the tempo binary, a test or the Python module), its size
// and modification time: a rebuilt scheduler reads none of an older build's entries.
std::string build_identity() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&parse_schedule), &info) || !info.dli_fname) return "?";
  struct stat st {};
  if (::stat(info.dli_fname, &st) != 0) return info.dli_fname;
  return cat(info.dli_fname, " ", st.st_size, " ", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec);
}

std::string key_text(const ir::Graph& g, const ScheduleOptions& o) {
  static const std::string build = build_identity();
  std::ostringstream k;
  k << kFormat << "\n" << build << "\n" << isl_version() << "\n";
  for (const auto& [op, out] : o.retained) k << "retained " << op << ":" << out << "\n";
  for (const auto& [name, v] : o.known_bounds) k << "bound " << name << "=" << v << "\n";
  k << "options " << o.whole_component << o.proximity << o.memory_proximity << o.deallocate
    << o.fuse << " " << o.max_isl_operations << "\n";
  for (const Swap& sw : o.swaps)
    k << "swap " << sw.op << ":" << sw.output << " late " << joined(sw.late) << " host "
      << joined(sw.host_reads) << " on_host " << joined(sw.on_host) << "\n";
  for (const ir::OpNode& op : g.ops())
    if (!op.domain.empty()) k << "domain " << op.id << " " << sym::dims_str(op.domain) << "\n";
  k << g.str();
  return k.str();
}

// Two 64-bit FNV-1a hashes with different starting values: 128 bits name an entry.
std::string hash128(const std::string& text) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(fnv1a(text)),
                static_cast<unsigned long long>(fnv1a(text, 0xcbf29ce484222325ULL ^
                                                                0x5bd1e9955bd1e995ULL)));
  return buf;
}

}  // namespace

std::string schedule_text(const Schedule& s) {
  std::ostringstream body;
  std::map<std::string, bool> symbols;
  if (s.root) {
    write(s.root, body, symbols);
  } else {
    body << "none\n";
  }
  for (const Dim& d : s.iterators) {  // the iterators line declares these
    symbols.erase(d.name());
    symbols.erase(d.bound.name());
  }
  std::ostringstream os;
  os << "schedule " << s.num_statements << " " << s.fused << " " << s.bounded << "\n";
  os << "iterators " << sym::dims_str(s.iterators) << "\n";
  os << "symbols ";
  const char* sep = "";
  for (const auto& [name, bound] : symbols) {
    os << sep << name << ":" << (bound ? 'b' : 'v');
    sep = ",";
  }
  os << "\nswapped ";
  for (size_t k = 0; k < s.swapped.size(); ++k)
    os << (k ? "," : "") << s.swapped[k].first << ":" << s.swapped[k].second;
  os << "\non_host " << joined(s.on_host) << "\n";
  return os.str() + body.str();
}

Schedule parse_schedule(const std::string& text) { return Reader(text).read(); }

ScheduleCache::ScheduleCache(std::string dir, const ir::Graph& g, const ScheduleOptions& options)
    : dir_(std::move(dir)) {
  const std::string key = key_text(g, options);
  const std::string name = hash128(key);
  path_ = (fs::path(dir_) / ("s" + name + ".txt")).string();
  header_ = cat(kFormat, " ", name, " ", key.size());
}

std::optional<Schedule> ScheduleCache::load() const {
  std::ifstream in(path_);
  if (!in) return std::nullopt;
  std::string header;
  std::getline(in, header);
  if (header != header_) return std::nullopt;
  std::stringstream rest;
  rest << in.rdbuf();
  try {
    Schedule s = parse_schedule(rest.str());
    s.from_cache = true;
    return s;
  } catch (const std::exception&) {
    return std::nullopt;  // computed again and stored over it
  }
}

void ScheduleCache::store(const Schedule& s) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  const std::string tmp = cat(path_, ".", ::getpid());
  {
    std::ofstream out(tmp);
    out << header_ << "\n" << schedule_text(s);
    if (!out) ec = std::make_error_code(std::errc::io_error);
  }
  if (!ec) fs::rename(tmp, path_, ec);
  if (ec) {
    fs::remove(tmp, ec);
    static bool warned = false;
    if (!warned)
      std::cerr << "[tempo] cannot write the schedule cache " << dir_ << "; schedules are "
                << "computed at every compile\n";
    warned = true;
  }
}

}  // namespace tempo::schedule
