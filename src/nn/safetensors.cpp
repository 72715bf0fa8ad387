// safetensors encoding and decoding with a small JSON reader for the header.
#include "nn/safetensors.h"

#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace tempo::nn {

namespace {

const char* st_dtype(DType d) {
  switch (d) {
    case DType::Float32:
      return "F32";
    case DType::Float64:
      return "F64";
    case DType::Int64:
      return "I64";
    case DType::Int32:
      return "I32";
    case DType::Bool:
      return "BOOL";
  }
  return "?";
}

bool parse_dtype(const std::string& s, DType* out) {
  static const std::pair<const char*, DType> table[] = {{"F32", DType::Float32},
                                                        {"F64", DType::Float64},
                                                        {"I64", DType::Int64},
                                                        {"I32", DType::Int32},
                                                        {"BOOL", DType::Bool}};
  for (const auto& [name, d] : table)
    if (s == name) {
      *out = d;
      return true;
    }
  return false;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A JSON value (only what safetensors headers contain).
struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  double number = 0;
  bool is_int = false;
  int64_t integer = 0;
  std::string str;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;
  const Json* get(const std::string& k) const {
    for (const auto& [key, v] : members)
      if (key == k) return &v;
    return nullptr;
  }
};

class JsonReader {
 public:
  JsonReader(const std::string& s, const std::string& what) : s_(s), what_(what) {}

  Json parse_document() {
    Json v = value(0);
    ws();
    if (p_ != s_.size()) fail("trailing characters after the JSON header");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw UserError(
        cat("cannot load ", what_, ": malformed safetensors header (", msg, " at byte ", p_, ")"));
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
        ++p_;
        if (d == '}') break;
        if (d != ',') fail("expected ',' or '}'");
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
        ++p_;
        if (d == ']') break;
        if (d != ',') fail("expected ',' or ']'");
      }
    } else if (c == '"') {
      v.kind = Json::String;
      v.str = string();
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      v.kind = Json::Number;
      size_t start = p_;
      if (s_[p_] == '-') ++p_;
      while (p_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[p_])) || s_[p_] == '.' ||
                                s_[p_] == 'e' || s_[p_] == 'E' || s_[p_] == '+' || s_[p_] == '-'))
        ++p_;
      std::string num = s_.substr(start, p_ - start);
      try {
        size_t used = 0;
        v.number = std::stod(num, &used);
        if (used != num.size()) fail("bad number");
        v.is_int = num.find_first_of(".eE") == std::string::npos;
        if (v.is_int) v.integer = std::stoll(num);
      } catch (const std::logic_error&) {
        fail(cat("bad number '", num, "'"));
      }
    } else if (s_.compare(p_, 4, "true") == 0 || s_.compare(p_, 5, "false") == 0) {
      v.kind = Json::Bool;
      p_ += s_[p_] == 't' ? 4 : 5;
    } else if (s_.compare(p_, 4, "null") == 0) {
      p_ += 4;
    } else {
      fail(cat("unexpected character '", c, "'"));
    }
    return v;
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
          if (p_ + 4 > s_.size()) fail("bad \\u escape");
          unsigned code = static_cast<unsigned>(std::stoul(s_.substr(p_, 4), nullptr, 16));
          p_ += 4;
          // Names are ASCII in practice; encode the code point as UTF-8.
          if (code < 0x80) {
            out += static_cast<char>(code);
          } else if (code < 0x800) {
            out += static_cast<char>(0xC0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
          }
          break;
        }
        default:
          fail("bad escape");
      }
    }
    return out;
  }

  const std::string& s_;
  std::string what_;
  size_t p_ = 0;
};

}  // namespace

std::string safetensors_encode(const NamedTensors& tensors) {
  std::string header = "{";
  uint64_t offset = 0;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const auto& [name, t] = tensors[k];
    uint64_t n = t.data.size();
    if (k) header += ',';
    header += json_string(name);
    header += cat(":{\"dtype\":\"", st_dtype(t.dtype), "\",\"shape\":[");
    for (size_t d = 0; d < t.shape.size(); ++d) header += cat(d ? "," : "", t.shape[d]);
    header += cat("],\"data_offsets\":[", offset, ",", offset + n, "]}");
    offset += n;
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';
  std::string out(8, '\0');
  uint64_t len = header.size();
  for (int b = 0; b < 8; ++b) out[b] = static_cast<char>((len >> (8 * b)) & 0xFF);
  out += header;
  out.reserve(out.size() + offset);
  // Host tensors are little-endian on every machine we run on.
  for (const auto& [name, t] : tensors)
    out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return out;
}

std::map<std::string, HostTensor> safetensors_decode(const std::string& bytes,
                                                     const std::string& what) {
  auto fail = [&](const std::string& msg) -> void {
    throw UserError(cat("cannot load ", what, ": ", msg));
  };
  if (bytes.size() < 8)
    fail(cat("file too short for a safetensors header (", bytes.size(), " bytes)"));
  uint64_t len = 0;
  for (int b = 0; b < 8; ++b)
    len |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[b])) << (8 * b);
  if (len > bytes.size() - 8)
    fail(cat("header length ", len, " exceeds the file size ", bytes.size()));
  Json root = JsonReader(bytes.substr(8, len), what).parse_document();
  if (root.kind != Json::Object) fail("the header is not a JSON object");
  const size_t data_start = 8 + len;
  const uint64_t data_size = bytes.size() - data_start;
  std::map<std::string, HostTensor> out;
  for (const auto& [name, v] : root.members) {
    if (name == "__metadata__") continue;
    auto bad = [&](const std::string& msg) { fail(cat("tensor '", name, "': ", msg)); };
    if (v.kind != Json::Object) bad("entry is not an object");
    const Json* dt = v.get("dtype");
    const Json* shape = v.get("shape");
    const Json* offs = v.get("data_offsets");
    if (!dt || dt->kind != Json::String) bad("missing dtype");
    if (!shape || shape->kind != Json::Array) bad("missing shape");
    if (!offs || offs->kind != Json::Array || offs->items.size() != 2) bad("missing data_offsets");
    HostTensor t;
    if (!parse_dtype(dt->str, &t.dtype)) bad(cat("unsupported dtype ", dt->str));
    uint64_t numel = 1;
    for (const Json& d : shape->items) {
      if (d.kind != Json::Number || !d.is_int || d.integer < 0) bad("bad shape entry");
      t.shape.push_back(d.integer);
      numel *= static_cast<uint64_t>(d.integer);
    }
    for (const Json& o : offs->items)
      if (o.kind != Json::Number || !o.is_int || o.integer < 0) bad("bad data_offsets");
    uint64_t begin = offs->items[0].integer, end = offs->items[1].integer;
    if (begin > end || end > data_size)
      bad(cat("data_offsets [", begin, ", ", end, "] outside the data (", data_size, " bytes)"));
    if (end - begin != numel * ir::dtype_size(t.dtype))
      bad(cat("data_offsets cover ", end - begin, " bytes but the shape needs ",
              numel * ir::dtype_size(t.dtype)));
    t.data.assign(bytes.begin() + data_start + begin, bytes.begin() + data_start + end);
    if (!out.emplace(name, std::move(t)).second) bad("duplicate name");
  }
  return out;
}

void save(const std::string& path, const NamedTensors& tensors) {
  std::string bytes = safetensors_encode(tensors);
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path tmp = target;
  tmp += cat(".tmp.", ::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      throw UserError(cat("cannot write checkpoint '", path, "': cannot create ", tmp.string()));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.flush();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw UserError(cat("cannot write checkpoint '", path, "': write failed"));
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw UserError(cat("cannot write checkpoint '", path, "': ", ec.message()));
  }
}

std::map<std::string, HostTensor> load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError(cat("cannot load '", path, "': no such file or not readable"));
  std::ostringstream ss;
  ss << f.rdbuf();
  return safetensors_decode(ss.str(), cat("'", path, "'"));
}

}  // namespace tempo::nn
