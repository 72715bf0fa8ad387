// Parser for Graph::str()'s text form. Expressions contain commas, brackets and colons, so the
// line is cut only at bracket depth 0 and each piece goes to sym::parse.
#include "ir/parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <set>
#include <string_view>

#include "symbolic/parse.h"
#include "util/error.h"

namespace tempo::ir {

namespace {

bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c));
}
bool is_ident(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

std::string line_error(int line_no, const std::string& text, const std::string& what) {
  return cat("line ", line_no, " `", text, "`: ", what);
}

// Looked up through the X-macro so that a new kind parses without touching this file.
bool find_kind(const std::string& name, OpKind& out) {
  static constexpr OpKind kinds[] = {
#define TEMPO_X(name, ...) OpKind::name,
      TEMPO_OP_KINDS(TEMPO_X)
#undef TEMPO_X
  };
  for (OpKind k : kinds)
    if (name == op_kind_name(k)) {
      out = k;
      return true;
    }
  return false;
}

// dtype_name answers "?" past the last dtype, which ends the scan (no second list of dtypes).
bool find_dtype(const std::string& name, DType& out) {
  for (int i = 0; i < 256; ++i) {
    const char* n = dtype_name(static_cast<DType>(i));
    if (std::string_view(n) == "?") break;
    if (name == n) {
      out = static_cast<DType>(i);
      return true;
    }
  }
  return false;
}

// `file.cpp:42`: what Graph::str() prints after ` @ `.
bool looks_like_location(std::string_view s) {
  size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == s.size()) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (is_space(s[i]) || (i > colon && !std::isdigit(static_cast<unsigned char>(s[i]))))
      return false;
  return true;
}

// An input as written; resolved once every op is known, since it may name a later op.
struct InputRef {
  OpId source = -1;
  int output = 0;
  Expr phi;
  Expr cond;
};

struct ParsedOp {
  OpNode op;
  std::vector<InputRef> inputs;
  int line_no = 0;
  std::string text;
};

// Parses one op line (already trimmed). pos_ indexes text_.
class LineParser {
 public:
  LineParser(std::string text, int line_no, const Dims& dims)
      : text_(std::move(text)), line_no_(line_no), dims_(dims) {}

  ParsedOp parse(OpId expected_id) {
    ParsedOp p;
    p.line_no = line_no_;
    p.text = text_;
    OpNode& op = p.op;

    expect('%', "an op such as `%0 = Exp(%1[t]) : f32(4)`");
    op.id = static_cast<OpId>(integer(text_, pos_, "an op number after '%'"));
    if (op.id != expected_id)
      fail(cat("op %", op.id, " out of order: ops are numbered from 0 in order, expected %",
               expected_id));
    expect('=', "'=' after the op number");
    std::string kind = identifier("an op kind");
    if (!find_kind(kind, op.kind)) fail(cat("unknown op kind '", kind, "'"));
    if (op.kind == OpKind::Udf)
      fail("Udf ops cannot be parsed (their function is not in the text)");

    skip_ws();
    size_t close = closing(text_, pos_, "'(' after the op kind");
    for (const std::string& piece : split_top(text_.substr(pos_ + 1, close - pos_ - 1)))
      p.inputs.push_back(input(piece));
    pos_ = close + 1;

    skip_ws();
    if (peek() == '{') {
      close = closing(text_, pos_, "'{'");
      attrs(split_top(text_.substr(pos_ + 1, close - pos_ - 1)), op.attrs);
      pos_ = close + 1;
    }

    expect(':', "':' before the output types");
    skip_ws();
    if (peek() == '(') {  // several outputs (or none): `(f32(2), i64(2))`
      close = closing(text_, pos_, "'('");
      for (const std::string& piece : split_top(text_.substr(pos_ + 1, close - pos_ - 1)))
        op.outputs.push_back(type(piece));
    } else {
      size_t start = pos_;
      identifier("an output type such as f32(4)");
      skip_ws();
      close = closing(text_, pos_, "'(' after the dtype");
      op.outputs.push_back(type(text_.substr(start, close + 1 - start)));
    }
    pos_ = close + 1;

    if (eat_word("over")) {
      skip_ws();
      close = closing(text_, pos_, "'(' after `over`");
      for (const std::string& name : split_top(text_.substr(pos_ + 1, close - pos_ - 1)))
        op.domain.push_back(dim(name, op.domain));
      pos_ = close + 1;
    }

    // Nothing in an expression is a '#', so the condition runs to the comment.
    if (eat_word("where")) {
      size_t end = std::min(text_.find('#', pos_), text_.size());
      op.cond = expr(text_.substr(pos_, end - pos_));
      pos_ = end;
    }

    skip_ws();
    if (pos_ < text_.size()) {
      if (text_[pos_] != '#') fail(cat("unexpected '", text_.substr(pos_), "'"));
      op.name = name(text_.substr(pos_ + 1));
    }
    return p;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw UserError(line_error(line_no_, text_, what));
  }

  void skip_ws() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void expect(char c, const char* what) {
    skip_ws();
    if (peek() != c) fail(cat("expected ", what, " but found '", text_.substr(pos_), "'"));
    ++pos_;
  }

  // A keyword, not the prefix of a longer name.
  bool eat_word(std::string_view w) {
    skip_ws();
    if (text_.compare(pos_, w.size(), w) != 0) return false;
    if (pos_ + w.size() < text_.size() && is_ident(text_[pos_ + w.size()])) return false;
    pos_ += w.size();
    return true;
  }

  std::string identifier(const char* what) {
    skip_ws();
    size_t start = pos_;
    while (pos_ < text_.size() && is_ident(text_[pos_])) ++pos_;
    if (start == pos_) fail(cat("expected ", what, " but found '", text_.substr(pos_), "'"));
    return text_.substr(start, pos_ - start);
  }

  // Non-negative decimal at s[pos], advancing pos.
  int64_t integer(const std::string& s, size_t& pos, const char* what) const {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data() + pos, s.data() + s.size(), v);
    if (ec != std::errc() || end == s.data() + pos || s[pos] == '-')
      fail(cat("expected ", what, " but found '", s.substr(pos), "'"));
    pos = static_cast<size_t>(end - s.data());
    return v;
  }

  // The index of the bracket closing the one at s[open].
  size_t closing(const std::string& s, size_t open, const char* what) const {
    static constexpr std::string_view openers = "([{", closers = ")]}";
    if (open >= s.size() || openers.find(s[open]) == std::string_view::npos)
      fail(cat("expected ", what, " but found '", s.substr(std::min(open, s.size())), "'"));
    std::string stack;
    for (size_t i = open; i < s.size(); ++i) {
      char c = s[i];
      if (openers.find(c) != std::string_view::npos) {
        stack += closers[openers.find(c)];
      } else if (closers.find(c) != std::string_view::npos) {
        if (c != stack.back()) fail(cat("unbalanced '", c, "' at column ", i + 1));
        stack.pop_back();
        if (stack.empty()) return i;
      }
    }
    fail(cat("unclosed '", s[open], "'"));
  }

  // Cuts at the commas outside brackets; each piece trimmed. Empty text has no pieces.
  std::vector<std::string> split_top(const std::string& s) const {
    std::vector<std::string> out;
    if (trim(s).empty()) return out;
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      char c = s[i];
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') {
        if (--depth < 0) fail(cat("unbalanced '", c, "' in '", s, "'"));
      }
      if (c == ',' && depth == 0) {
        out.push_back(trim(std::string_view(s).substr(start, i - start)));
        start = i + 1;
      }
    }
    out.push_back(trim(std::string_view(s).substr(start)));
    for (const std::string& piece : out)
      if (piece.empty()) fail(cat("empty entry in '", s, "'"));
    return out;
  }

  Expr expr(const std::string& s) const {
    try {
      return sym::parse(s, dims_);
    } catch (const UserError& e) {
      fail(e.what());
    }
  }

  // `%2.1[t - 1] if 0 < t`
  InputRef input(const std::string& s) const {
    InputRef in;
    if (s[0] != '%') fail(cat("expected an input such as %1[t] but found '", s, "'"));
    size_t i = 1;
    in.source = static_cast<OpId>(integer(s, i, "an op number after '%'"));
    if (i < s.size() && s[i] == '.') {
      ++i;
      in.output = static_cast<int>(integer(s, i, "an output number after '.'"));
    }
    size_t close = closing(s, i, "an index such as [t - 1] after the input");
    std::string phi = s.substr(i, close + 1 - i);
    if (phi != "[?]") in.phi = expr(phi);  // Graph::str()'s spelling of an undefined index
    std::string rest = trim(std::string_view(s).substr(close + 1));
    if (!rest.empty()) {
      if (rest.compare(0, 2, "if") != 0 || rest.size() == 2 || !is_space(rest[2]))
        fail(cat("unexpected '", rest, "' after input ", s.substr(0, close + 1)));
      in.cond = expr(rest.substr(2));
    }
    return in;
  }

  // `[0, -1]`, `[t, T - 1]`: the text between the brackets.
  std::string list_body(const std::string& key, const std::string& v) const {
    if (v.size() < 2 || v.front() != '[' || closing(v, 0, "'['") != v.size() - 1)
      fail(cat("attribute ", key, " must be a list such as [0, 1] but is '", v, "'"));
    return v.substr(1, v.size() - 2);
  }

  void attrs(const std::vector<std::string>& pieces, Attrs& a) const {
    std::set<std::string> seen;
    for (const std::string& piece : pieces) {
      size_t eq = piece.find('=');
      std::string key = trim(std::string_view(piece).substr(0, eq));
      if (!seen.insert(key).second) fail(cat("attribute '", key, "' given twice"));
      if (eq == std::string::npos) {
        if (key != "keepdim") fail(cat("unknown attribute '", key, "'"));
        a.keepdim = true;
        continue;
      }
      std::string value = trim(std::string_view(piece).substr(eq + 1));
      if (key == "ints") {
        for (const std::string& x : split_top(list_body(key, value))) {
          int64_t v = 0;
          auto [end, ec] = std::from_chars(x.data(), x.data() + x.size(), v);
          if (ec != std::errc() || end != x.data() + x.size())
            fail(cat("ints: '", x, "' is not an integer"));
          a.ints.push_back(v);
        }
      } else if (key == "exprs") {
        for (const std::string& x : split_top(list_body(key, value))) a.exprs.push_back(expr(x));
      } else if (key == "scalar") {
        // strtod reads what ostream prints, inf and nan included.
        char* end = nullptr;
        a.scalar = std::strtod(value.c_str(), &end);
        if (value.empty() || end != value.c_str() + value.size())
          fail(cat("scalar: '", value, "' is not a number"));
      } else if (key == "dtype") {
        if (!find_dtype(value, a.dtype)) fail(cat("unknown dtype '", value, "'"));
      } else if (key == "udf") {
        fail("Udf ops cannot be parsed (their function is not in the text)");
      } else {
        fail(cat("unknown attribute '", key, "'"));
      }
    }
  }

  // `f32(4, T - t)`, `bool()`
  TensorType type(const std::string& s) const {
    size_t open = s.find('(');
    if (open == std::string::npos || s.back() != ')')
      fail(cat("expected a type such as f32(4, T) but found '", s, "'"));
    TensorType t;
    std::string dt = trim(std::string_view(s).substr(0, open));
    if (!find_dtype(dt, t.dtype)) fail(cat("unknown dtype '", dt, "'"));
    if (closing(s, open, "'('") != s.size() - 1) fail(cat("unexpected text in type '", s, "'"));
    for (const std::string& d : split_top(s.substr(open + 1, s.size() - open - 2)))
      t.shape.dims.push_back(expr(d));
    return t;
  }

  Dim dim(const std::string& name, const Dims& domain) const {
    for (const Dim& d : domain)
      if (d.name() == name) fail(cat("dimension '", name, "' listed twice"));
    for (const Dim& d : dims_)
      if (d.name() == name) return d;
    fail(cat("unknown dimension '", name, "' (the dimensions are ", dims_str(dims_), ")"));
  }

  // The comment after '#': `name @ file.cpp:7`; the location is dropped.
  std::string name(const std::string& comment) const {
    std::string n = comment;
    if (!n.empty() && n[0] == ' ') n.erase(0, 1);  // Graph::str() writes "# " before the name
    while (!n.empty() && is_space(n.back())) n.pop_back();
    size_t at = n.rfind(" @ ");
    if (at != std::string::npos && looks_like_location(std::string_view(n).substr(at + 3)))
      n.erase(at);
    return n;
  }

  std::string text_;
  size_t pos_ = 0;
  int line_no_;
  const Dims& dims_;
};

}  // namespace

Graph parse_graph(const std::string& text, const Dims& dims) {
  std::vector<ParsedOp> parsed;
  int line_no = 0;
  for (size_t start = 0; start <= text.size();) {
    size_t end = std::min(text.find('\n', start), text.size());
    std::string line = trim(std::string_view(text).substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (line.empty() || line.compare(0, 2, "//") == 0) continue;
    parsed.push_back(
        LineParser(std::move(line), line_no, dims).parse(static_cast<OpId>(parsed.size())));
  }

  const OpId n = static_cast<OpId>(parsed.size());
  for (const ParsedOp& p : parsed)
    for (const InputRef& in : p.inputs)
      if (in.source >= n)
        throw UserError(line_error(p.line_no, p.text,
                                   cat("input %", in.source, " refers to no op (the graph has ", n,
                                       n == 1 ? " op)" : " ops)")));

  // All ops first, so that edges may point forward.
  Graph g;
  for (const ParsedOp& p : parsed) g.add_op(p.op);
  for (const ParsedOp& p : parsed)
    for (const InputRef& in : p.inputs) g.add_edge(p.op.id, in.source, in.output, in.phi, in.cond);
  return g;
}

std::string str_without_locations(const Graph& g) {
  Graph copy = g;
  for (size_t i = 0; i < copy.num_ops(); ++i) copy.op(static_cast<OpId>(i)).loc = {};
  return copy.str();
}

}  // namespace tempo::ir
