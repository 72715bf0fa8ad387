// Recursive-descent parser for the printed form of expressions (see parse.h for the grammar).
#include "symbolic/parse.h"

#include <cctype>
#include <cstdint>
#include <limits>

#include "util/error.h"

namespace tempo::sym {
namespace {

enum class Tok {
  End, Int, Name, LParen, RParen, LBracket, RBracket, Comma, Colon,
  Plus, Minus, Star, SlashSlash, Slash, Percent,
  EqEq, NotEq, Lt, Le, Gt, Ge, AndAnd, OrOr, Bang,
};

struct Token {
  Tok kind = Tok::End;
  size_t pos = 0;       // offset of the first character in the text
  std::string text;     // the characters of the token
  uint64_t value = 0;   // Int: magnitude (up to 2^63, so that -9223372036854775808 parses)
};

class Parser {
 public:
  Parser(const std::string& text, const Dims& dims) : text_(text), dims_(dims) { advance(); }

  Expr parse_all() {
    Expr e = parse_seq();
    if (tok_.kind != Tok::End) fail_here("unexpected '" + tok_.text + "'");
    return e;
  }

 private:
  // ---- errors ------------------------------------------------------------------------------
  [[noreturn]] void fail_at(size_t pos, const std::string& what, const std::string& hint = "") const {
    throw UserError(cat(what, " at column ", pos + 1, " in \"", text_, "\"", hint));
  }
  [[noreturn]] void fail_here(const std::string& what) const {
    if (tok_.kind == Tok::End) fail_at(tok_.pos, "unexpected end of input");
    fail_at(tok_.pos, what);
  }
  void expect(Tok kind, const char* spelled) {
    if (tok_.kind != kind) {
      if (tok_.kind == Tok::End) fail_at(tok_.pos, cat("expected '", spelled, "' but the input ended"));
      fail_at(tok_.pos, cat("expected '", spelled, "' but found '", tok_.text, "'"));
    }
    advance();
  }
  // Runs a constructor of expr.h; its UserError (wrong operand type, division by zero) gets the
  // position of the operator that built the node.
  template <typename F>
  Expr build(size_t pos, F&& f) {
    try {
      return f();
    } catch (const UserError& e) {
      fail_at(pos, e.what());
    }
  }

  // ---- lexer -------------------------------------------------------------------------------
  void advance() {
    size_t& p = pos_;
    while (p < text_.size() && std::isspace(static_cast<unsigned char>(text_[p]))) ++p;
    tok_ = Token{};
    tok_.pos = p;
    if (p >= text_.size()) return;
    char c = text_[p];
    auto two = [&](char next) { return p + 1 < text_.size() && text_[p + 1] == next; };
    auto take = [&](Tok kind, size_t len) {
      tok_.kind = kind;
      tok_.text = text_.substr(p, len);
      p += len;
    };
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = p;
      constexpr uint64_t kMaxMagnitude = uint64_t{1} << 63;
      uint64_t v = 0;
      while (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_[p]))) {
        uint64_t d = static_cast<uint64_t>(text_[p] - '0');
        if (v > (kMaxMagnitude - d) / 10)
          fail_at(start, "integer literal '" + digits_from(start) + "' is too large");
        v = v * 10 + d;
        ++p;
      }
      tok_.kind = Tok::Int;
      tok_.text = text_.substr(start, p - start);
      tok_.value = v;
      return;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = p;
      while (p < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[p])) || text_[p] == '_'))
        ++p;
      tok_.kind = Tok::Name;
      tok_.text = text_.substr(start, p - start);
      return;
    }
    switch (c) {
      case '(': return take(Tok::LParen, 1);
      case ')': return take(Tok::RParen, 1);
      case '[': return take(Tok::LBracket, 1);
      case ']': return take(Tok::RBracket, 1);
      case ',': return take(Tok::Comma, 1);
      case ':': return take(Tok::Colon, 1);
      case '+': return take(Tok::Plus, 1);
      case '-': return take(Tok::Minus, 1);
      case '*': return take(Tok::Star, 1);
      case '%': return take(Tok::Percent, 1);
      case '/': return two('/') ? take(Tok::SlashSlash, 2) : take(Tok::Slash, 1);
      case '<': return two('=') ? take(Tok::Le, 2) : take(Tok::Lt, 1);
      case '>': return two('=') ? take(Tok::Ge, 2) : take(Tok::Gt, 1);
      case '!': return two('=') ? take(Tok::NotEq, 2) : take(Tok::Bang, 1);
      case '=':
        if (two('=')) return take(Tok::EqEq, 2);
        fail_at(p, "unexpected '=' (use '==' to compare)");
      case '&':
        if (two('&')) return take(Tok::AndAnd, 2);
        fail_at(p, "unexpected '&' (use '&&')");
      case '|':
        if (two('|')) return take(Tok::OrOr, 2);
        fail_at(p, "unexpected '|' (use '||')");
      default:
        fail_at(p, cat("unexpected character '", c, "'"));
    }
  }
  std::string digits_from(size_t start) const {
    size_t end = start;
    while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
    return text_.substr(start, end - start);
  }

  // ---- grammar -----------------------------------------------------------------------------
  // seq := '[' (slice (',' slice)*)? ']' | slice
  Expr parse_seq() {
    if (tok_.kind != Tok::LBracket) return parse_slice();
    size_t pos = tok_.pos;
    advance();
    std::vector<Expr> entries;
    if (tok_.kind != Tok::RBracket) {
      entries.push_back(parse_slice());
      while (tok_.kind == Tok::Comma) {
        advance();
        entries.push_back(parse_slice());
      }
    }
    expect(Tok::RBracket, "]");
    return build(pos, [&] { return seq(std::move(entries)); });
  }

  // slice := or (':' or (':' or)?)?
  Expr parse_slice() {
    Expr start = parse_or();
    if (tok_.kind != Tok::Colon) return start;
    size_t pos = tok_.pos;
    advance();
    Expr stop = parse_or();
    Expr step(1);
    if (tok_.kind == Tok::Colon) {
      advance();
      step = parse_or();
    }
    return build(pos, [&] { return slice(start, stop, step); });
  }

  Expr parse_or() {
    Expr e = parse_and();
    while (tok_.kind == Tok::OrOr) {
      size_t pos = tok_.pos;
      advance();
      Expr r = parse_and();
      e = build(pos, [&] { return e || r; });
    }
    return e;
  }

  Expr parse_and() {
    Expr e = parse_cmp();
    while (tok_.kind == Tok::AndAnd) {
      size_t pos = tok_.pos;
      advance();
      Expr r = parse_cmp();
      e = build(pos, [&] { return e && r; });
    }
    return e;
  }

  // Comparisons do not chain: "a < b < c" is a syntax error.
  Expr parse_cmp() {
    Expr l = parse_add();
    Tok k = tok_.kind;
    if (k != Tok::EqEq && k != Tok::NotEq && k != Tok::Lt && k != Tok::Le && k != Tok::Gt &&
        k != Tok::Ge)
      return l;
    size_t pos = tok_.pos;
    advance();
    Expr r = parse_add();
    Expr e = build(pos, [&] {
      switch (k) {
        case Tok::EqEq: return l == r;
        case Tok::NotEq: return l != r;
        case Tok::Lt: return l < r;
        case Tok::Le: return l <= r;
        case Tok::Gt: return l > r;
        default: return l >= r;
      }
    });
    Tok n = tok_.kind;
    if (n == Tok::EqEq || n == Tok::NotEq || n == Tok::Lt || n == Tok::Le || n == Tok::Gt ||
        n == Tok::Ge)
      fail_at(tok_.pos, "comparisons do not chain: unexpected '" + tok_.text +
                            "' (combine them with '&&')");
    return e;
  }

  Expr parse_add() {
    Expr e = parse_mul();
    while (tok_.kind == Tok::Plus || tok_.kind == Tok::Minus) {
      bool plus = tok_.kind == Tok::Plus;
      size_t pos = tok_.pos;
      advance();
      Expr r = parse_mul();
      e = build(pos, [&] { return plus ? e + r : e - r; });
    }
    return e;
  }

  Expr parse_mul() {
    Expr e = parse_unary();
    while (tok_.kind == Tok::Star || tok_.kind == Tok::SlashSlash || tok_.kind == Tok::Slash ||
           tok_.kind == Tok::Percent) {
      Tok k = tok_.kind;
      size_t pos = tok_.pos;
      advance();
      Expr r = parse_unary();
      e = build(pos, [&] {
        if (k == Tok::Star) return e * r;
        if (k == Tok::Percent) return e % r;
        return floordiv(e, r);
      });
    }
    return e;
  }

  Expr parse_unary() {
    size_t pos = tok_.pos;
    // Parentheses and prefix operators recurse through here: bound the depth, so that no input
    // exhausts the stack.
    if (++depth_ > kMaxDepth)
      fail_at(pos, cat("expression nested more than ", kMaxDepth, " levels deep"));
    Expr e = parse_prefixed(pos);
    --depth_;
    return e;
  }

  Expr parse_prefixed(size_t pos) {
    if (tok_.kind == Tok::Minus) {
      advance();
      // The one literal whose magnitude does not fit in int64: -9223372036854775808.
      if (tok_.kind == Tok::Int && tok_.value == (uint64_t{1} << 63)) {
        advance();
        return Expr(std::numeric_limits<int64_t>::min());
      }
      Expr a = parse_unary();
      return build(pos, [&] { return -a; });
    }
    if (tok_.kind == Tok::Bang) {
      advance();
      Expr a = parse_unary();
      return build(pos, [&] { return !a; });
    }
    return parse_atom();
  }

  Expr parse_atom() {
    const Token t = tok_;
    switch (t.kind) {
      case Tok::Int:
        if (t.value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          fail_at(t.pos, "integer literal '" + t.text + "' is too large");
        advance();
        return Expr(static_cast<int64_t>(t.value));
      case Tok::LParen: {
        advance();
        Expr e = parse_or();
        expect(Tok::RParen, ")");
        return e;
      }
      case Tok::Name: {
        advance();
        if (t.text == "true") return Expr::boolean(true);
        if (t.text == "false") return Expr::boolean(false);
        if ((t.text == "min" || t.text == "max") && tok_.kind == Tok::LParen) {
          advance();
          std::vector<Expr> args{parse_or()};
          while (tok_.kind == Tok::Comma) {
            advance();
            args.push_back(parse_or());
          }
          expect(Tok::RParen, ")");
          return build(t.pos, [&] { return t.text == "min" ? min(args) : max(args); });
        }
        for (const Dim& d : dims_) {
          if (d.var.name() == t.text) return d.var;
          if (d.bound.name() == t.text) return d.bound;
        }
        std::string known;
        for (const Dim& d : dims_) known += (known.empty() ? "" : ", ") + d.var.name() + ", " + d.bound.name();
        fail_at(t.pos, cat("unknown symbol '", t.text, "'"),
                known.empty() ? " (no dimensions are declared)" : " (known symbols: " + known + ")");
      }
      default:
        fail_here("unexpected '" + t.text + "'");
    }
  }

  static constexpr int kMaxDepth = 256;
  const std::string& text_;
  const Dims& dims_;
  int depth_ = 0;  // parse_unary calls in progress
  size_t pos_ = 0;
  Token tok_;
};

}  // namespace

Expr parse(const std::string& text, const Dims& dims) { return Parser(text, dims).parse_all(); }

}  // namespace tempo::sym
