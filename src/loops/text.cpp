#include "loops/text.h"

#include <isl/ctx.h>
#include <isl/map.h>
#include <isl/set.h>

#include <cctype>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "symbolic/isl_bridge.h"
#include "util/error.h"

namespace tempo::loops {
namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

struct Access {
  std::string array;
  std::vector<std::string> index;
  std::string isl() const {
    std::string out = array + "[";
    for (size_t k = 0; k < index.size(); ++k) out += (k ? "," : "") + index[k];
    return out + "]";
  }
};

class Parser {
 public:
  Parser(std::string source, std::string name) : source_(std::move(source)), builder_(name) {}

  Program parse(const std::string& text) {
    std::istringstream in(text);
    std::string raw;
    std::vector<std::pair<int, std::string>> lines;
    for (int n = 1; std::getline(in, raw); ++n) {
      std::string l = trim(raw.substr(0, raw.find('#')));
      if (!l.empty()) lines.emplace_back(n, l);
    }
    for (size_t k = 0; k < lines.size(); ++k) {
      line_ = lines[k].first;
      const std::string& l = lines[k].second;
      std::istringstream words(l);
      std::string word;
      words >> word;
      if (word == "program") {
        std::string n;
        words >> n;
        name_ = n;
      } else if (word == "array") {
        array(words);
      } else if (word == "statement") {
        if (k + 1 >= lines.size()) fail("a statement needs its body on the next line");
        std::string header = l.substr(word.size());
        line_ = lines[k + 1].first;
        std::string body = lines[k + 1].second;
        line_ = lines[k].first;
        std::vector<std::string> schedule;
        size_t next = k + 2;
        if (next < lines.size() && lines[next].second.rfind("schedule", 0) == 0) {
          std::istringstream rows(lines[next].second.substr(8));
          for (std::string r; rows >> r;) schedule.push_back(r);
        }
        statement(header, body, lines[k + 1].first, schedule, next < lines.size() ? lines[next].first : 0);
        k = schedule.empty() ? k + 1 : k + 2;
      } else {
        fail(cat("unknown line `", word, "` (expected program, array, statement or schedule)"));
      }
    }
    if (stmts_ == 0) fail("no statements", 0);
    Program p = builder_.build();
    if (!name_.empty()) p.name = name_;
    return p;
  }

 private:
  [[noreturn]] void fail(const std::string& what, int line = -1) const {
    int n = line < 0 ? line_ : line;
    throw UserError(n > 0 ? cat(source_, ":", n, ": ", what) : cat(source_, ": ", what));
  }

  void array(std::istringstream& words) {
    std::string name;
    words >> name;
    if (name.empty() || !ident_start(name[0])) fail("an array needs a name");
    std::vector<int64_t> sizes;
    for (std::string w; words >> w;) {
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(w.c_str(), &end, 10);
      if (*end || v <= 0) fail(cat("array ", name, ": size `", w, "` is not a positive integer"));
      if (errno == ERANGE) fail(cat("array ", name, ": size `", w, "` is too large"));
      sizes.push_back(v);
    }
    if (sizes.empty()) fail(cat("array ", name, " has no sizes"));
    if (!arrays_.emplace(name, sizes.size()).second) fail(cat("array ", name, " is declared twice"));
    builder_.array(name, sizes);
  }

  // Accesses in `text` (C form, A[i][j+1]); other names must be iterators or called functions.
  std::vector<Access> accesses(const std::string& text, const std::vector<std::string>& vars,
                               int line) {
    std::vector<Access> out;
    for (size_t k = 0; k < text.size();) {
      if (std::isdigit(static_cast<unsigned char>(text[k]))) {  // a number, exponent included
        while (k < text.size() && (ident_char(text[k]) || text[k] == '.')) ++k;
        continue;
      }
      if (!ident_start(text[k])) {
        ++k;
        continue;
      }
      size_t e = k;
      while (e < text.size() && ident_char(text[e])) ++e;
      std::string id = text.substr(k, e - k);
      size_t after = e;
      while (after < text.size() && text[after] == ' ') ++after;
      const bool indexed = after < text.size() && text[after] == '[';
      auto arr = arrays_.find(id);
      if (indexed) {
        if (arr == arrays_.end()) fail(cat("unknown array `", id, "`"), line);
        Access a{id, {}};
        size_t at = after;
        while (at < text.size() && text[at] == '[') {
          int depth = 0;
          size_t close = at;
          for (; close < text.size(); ++close) {
            if (text[close] == '[') ++depth;
            if (text[close] == ']' && --depth == 0) break;
          }
          if (close >= text.size()) fail(cat("unclosed `[` after ", id), line);
          std::string index = trim(text.substr(at + 1, close - at - 1));
          check_affine(id, index, vars, line);
          a.index.push_back(index);
          at = close + 1;
          while (at < text.size() && text[at] == ' ') ++at;
        }
        if (a.index.size() != arr->second)
          fail(cat("`", id, "` has ", arr->second, " dimensions, not ", a.index.size()), line);
        out.push_back(a);
        k = at;
        continue;
      }
      if (arr != arrays_.end()) fail(cat("array `", id, "` is used without indices"), line);
      const bool call = after < text.size() && text[after] == '(';
      bool var = false;
      for (const std::string& v : vars) var |= v == id;
      if (!var && !call) fail(cat("unknown name `", id, "` (not an iterator or an array)"), line);
      k = e;
    }
    return out;
  }

  void check_affine(const std::string& array, const std::string& index,
                    const std::vector<std::string>& vars, int line) {
    std::string m = "{ [";
    for (size_t k = 0; k < vars.size(); ++k) m += (k ? "," : "") + vars[k];
    m += "] -> [" + index + "] }";
    isl_map* map = isl_map_read_from_str(isl_.get(), m.c_str());
    if (!map)
      fail(cat("index `", index, "` of ", array, " is not an affine expression of the iterators"),
           line);
    isl_map_free(map);
  }

  void statement(const std::string& header, const std::string& body, int body_line,
                 std::vector<std::string> schedule, int schedule_line) {
    size_t colon = header.find(':');
    if (colon == std::string::npos) fail("a statement is `statement NAME ITERATORS : CONSTRAINTS`");
    std::istringstream words(header.substr(0, colon));
    std::string name;
    words >> name;
    std::vector<std::string> vars;
    for (std::string v; words >> v;) vars.push_back(v);
    if (name.empty() || vars.empty()) fail("a statement needs a name and at least one iterator");
    std::string constraints = trim(header.substr(colon + 1));
    std::string domain = cat("{ ", name, "[", [&] {
      std::string s;
      for (size_t k = 0; k < vars.size(); ++k) s += (k ? "," : "") + vars[k];
      return s;
    }(), "] : ", constraints, " }");
    isl_set* d = isl_set_read_from_str(isl_.get(), domain.c_str());
    if (!d) fail(cat("the constraints `", constraints, "` do not parse (isl syntax, affine)"));
    isl_bool bounded = isl_set_is_bounded(d);
    isl_set_free(d);
    if (bounded != isl_bool_true) fail(cat("the domain of ", name, " is not bounded"));

    // The body: LHS op RHS with op one of = += -= *=.
    size_t eq = std::string::npos;
    for (size_t k = 0; k < body.size(); ++k)
      if (body[k] == '=' && (k + 1 >= body.size() || body[k + 1] != '=') &&
          (k == 0 || std::string("=<>!").find(body[k - 1]) == std::string::npos ||
           body[k - 1] == '\0')) {
        eq = k;
        break;
      }
    if (eq == std::string::npos) fail("the body must be an assignment `A[..] = ...`", body_line);
    bool compound = eq > 0 && std::string("+-*").find(body[eq - 1]) != std::string::npos;
    std::string lhs = trim(body.substr(0, compound ? eq - 1 : eq));
    std::string rhs = body.substr(eq + 1);
    std::vector<Access> writes = accesses(lhs, vars, body_line);
    if (writes.size() != 1 || lhs.find(writes[0].array) != 0)
      fail("the left side must be one array element", body_line);
    std::vector<Access> reads = accesses(rhs, vars, body_line);
    if (compound) reads.push_back(writes[0]);
    std::vector<std::string> r, w{writes[0].isl()};
    for (const Access& a : reads) r.push_back(a.isl());
    if (schedule.empty()) {
      schedule.push_back(cat(stmts_));
      for (const std::string& v : vars) {
        schedule.push_back(v);
        schedule.push_back("0");
      }
    } else if (schedule.size() != 2 * vars.size() + 1) {
      fail(cat("statement ", name, " needs a schedule of ", 2 * vars.size() + 1, " rows, not ",
               schedule.size()),
           schedule_line);
    }
    std::string c_body = trim(body);
    while (!c_body.empty() && c_body.back() == ';') c_body.pop_back();
    builder_.statement(name, vars, constraints, c_body, r, w, schedule);
    ++stmts_;
  }

  std::string source_, name_;
  ProgramBuilder builder_;
  sym::IslContext isl_;
  std::map<std::string, size_t> arrays_;  // name -> dimensions
  int line_ = 0, stmts_ = 0;
};

}  // namespace

Program parse_program(const std::string& text, const std::string& source,
                      const std::string& default_name) {
  return Parser(source, default_name).parse(text);
}

Program read_program_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(cat("cannot read loop program `", path, "`"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string stem = std::filesystem::path(path).stem().string();
  for (char& c : stem)
    if (!ident_char(c)) c = '_';
  if (stem.empty() || !ident_start(stem[0])) stem = "p_" + stem;
  return parse_program(ss.str(), path, stem);
}

}  // namespace tempo::loops
