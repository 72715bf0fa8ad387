// A recursive-descent JSON reader with offsets in its errors.
#include "nn/json.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "util/error.h"

namespace tempo::nn {

Json::Json() = default;

const Json* Json::get(const std::string& k) const {
  for (const auto& [key, v] : members)
    if (key == k) return &v;
  return nullptr;
}

namespace {

void append_utf8(std::string& out, uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

class JsonReader {
 public:
  JsonReader(const std::string& s, const std::string& what) : s_(s), what_(what) {}

  Json parse_document() {
    Json v = value(0);
    ws();
    if (p_ != s_.size()) fail("trailing characters after the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw UserError(cat("malformed ", what_, ": ", msg, " at byte ", p_));
  }
  void ws() {
    while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_]))) ++p_;
  }
  char peek() {
    ws();
    if (p_ >= s_.size()) fail("unexpected end");
    return s_[p_];
  }
  void expect(char c) {
    if (peek() != c) fail(cat("expected '", c, "'"));
    ++p_;
  }
  bool literal(const char* word) {
    std::string w = word;
    if (s_.compare(p_, w.size(), w) != 0) return false;
    p_ += w.size();
    return true;
  }

  Json value(int depth) {
    if (depth > 64) fail("nesting too deep");
    char c = peek();
    Json v;
    if (c == '{') {
      v.kind = Json::Object;
      ++p_;
      if (peek() == '}') {
        ++p_;
        return v;
      }
      for (;;) {
        if (peek() != '"') fail("expected a key");
        std::string k = string();
        expect(':');
        v.members.emplace_back(std::move(k), value(depth + 1));
        char d = peek();
        if (d != ',' && d != '}') fail("expected ',' or '}'");
        ++p_;
        if (d == '}') break;
      }
    } else if (c == '[') {
      v.kind = Json::Array;
      ++p_;
      if (peek() == ']') {
        ++p_;
        return v;
      }
      for (;;) {
        v.items.push_back(value(depth + 1));
        char d = peek();
        if (d != ',' && d != ']') fail("expected ',' or ']'");
        ++p_;
        if (d == ']') break;
      }
    } else if (c == '"') {
      v.kind = Json::String;
      v.str = string();
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      number(v);
    } else if (literal("true") || literal("false")) {
      v.kind = Json::Bool;
      v.boolean = c == 't';
    } else if (!literal("null")) {
      fail(cat("unexpected character '", c, "'"));
    }
    return v;
  }

  void number(Json& v) {
    v.kind = Json::Number;
    const size_t start = p_;
    auto digits = [&] {
      size_t from = p_;
      while (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) ++p_;
      if (p_ == from) fail("expected a digit");
    };
    if (s_[p_] == '-') ++p_;
    digits();
    bool integral = true;
    if (p_ < s_.size() && s_[p_] == '.') {
      ++p_;
      digits();
      integral = false;
    }
    if (p_ < s_.size() && (s_[p_] == 'e' || s_[p_] == 'E')) {
      ++p_;
      if (p_ < s_.size() && (s_[p_] == '+' || s_[p_] == '-')) ++p_;
      digits();
      integral = false;
    }
    const std::string num = s_.substr(start, p_ - start);
    v.number = std::strtod(num.c_str(), nullptr);  // the grammar was checked above
    if (integral) {
      try {
        v.integer = std::stoll(num);
        v.is_int = true;
      } catch (const std::out_of_range&) {
        // too large for int64: a double only
      }
    }
  }

  uint32_t hex4() {
    if (p_ + 4 > s_.size()) fail("bad \\u escape");
    uint32_t code = 0;
    for (int k = 0; k < 4; ++k) {
      char h = s_[p_ + k];
      int d = h >= '0' && h <= '9'   ? h - '0'
              : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                     : -1;
      if (d < 0) fail("bad \\u escape");
      code = code * 16 + static_cast<uint32_t>(d);
    }
    p_ += 4;
    return code;
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (p_ >= s_.size()) fail("unterminated string");
      char c = s_[p_++];
      if (c == '"') break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p_ >= s_.size()) fail("unterminated escape");
      char e = s_[p_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          uint32_t code = hex4();
          // Code points above U+FFFF come as a high and a low surrogate escape.
          if (code >= 0xD800 && code < 0xDC00) {
            if (s_.compare(p_, 2, "\\u") != 0) fail("unpaired surrogate in \\u escape");
            p_ += 2;
            uint32_t low = hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("unpaired surrogate in \\u escape");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code < 0xE000) {
            fail("unpaired surrogate in \\u escape");
          }
          append_utf8(out, code);
          break;
        }
        default:
          --p_;
          fail("bad escape");
      }
    }
    return out;
  }

  const std::string& s_;
  const std::string& what_;
  size_t p_ = 0;
};

}  // namespace

Json parse_json(const std::string& text, const std::string& what) {
  return JsonReader(text, what).parse_document();
}

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace tempo::nn
