// Byte-level BPE: tokenizer.json reading, Llama 3 pre-tokenization, merging and decoding.
#include "llm/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "nn/json.h"
#include "util/error.h"

namespace tempo::llm {

namespace {

using nn::Json;

// GPT-2's byte-to-symbol map: printable Latin-1 bytes stand for themselves, the other 68 bytes
// (controls, space, ...) for the code points 256, 257, ... in byte order, so that every symbol
// is a visible character.
struct ByteSymbols {
  std::array<uint32_t, 256> code{};
  std::array<std::string, 256> utf8;
  std::vector<int> byte_of;  // code point -> byte, -1 if none

  ByteSymbols() : byte_of(256 + 68, -1) {
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      code[b] = printable ? static_cast<uint32_t>(b) : next++;
      byte_of[code[b]] = b;
      uint32_t c = code[b];
      utf8[b] = c < 0x80 ? std::string(1, static_cast<char>(c))
                         : std::string{static_cast<char>(0xC0 | (c >> 6)),
                                       static_cast<char>(0x80 | (c & 0x3F))};
    }
  }
};

const ByteSymbols& byte_symbols() {
  static const ByteSymbols s;
  return s;
}

bool is_letter(unsigned char c) { return c >= 0x80 || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
bool is_newline(unsigned char c) { return c == '\n' || c == '\r'; }
bool is_other(unsigned char c) { return !is_letter(c) && !is_digit(c) && !is_space(c); }

// The end of the pre-token that starts at i (the first alternative of the pattern that matches).
size_t piece_end(const std::string& s, size_t i) {
  const size_t n = s.size();
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  auto lower = [&](size_t k) { return static_cast<char>(at(k) | 0x20); };
  const unsigned char c = at(i);
  // Contractions: 's 't 're 've 'm 'll 'd, any case.
  if (c == '\'' && i + 1 < n && is_letter(at(i + 1))) {
    const char a = lower(i + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if (i + 2 < n) {
      const char b = lower(i + 2);
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
  }
  auto letters_from = [&](size_t k) {
    while (k < n && is_letter(at(k))) ++k;
    return k;
  };
  // Letters, with one leading character that is not a letter, digit or newline.
  if (is_letter(c)) return letters_from(i);
  if (!is_newline(c) && !is_digit(c) && i + 1 < n && is_letter(at(i + 1)))
    return letters_from(i + 1);
  // One to three digits.
  if (is_digit(c)) {
    size_t k = i;
    while (k < n && k < i + 3 && is_digit(at(k))) ++k;
    return k;
  }
  // Punctuation (after an optional space), then newlines.
  size_t k = c == ' ' ? i + 1 : i;
  if (k < n && is_other(at(k))) {
    while (k < n && is_other(at(k))) ++k;
    while (k < n && is_newline(at(k))) ++k;
    return k;
  }
  // Whitespace from here on: up to and including its last newline, if it has one.
  size_t ws_end = i;
  while (ws_end < n && is_space(at(ws_end))) ++ws_end;
  for (size_t e = ws_end; e > i; --e)
    if (is_newline(at(e - 1))) return e;
  // Otherwise all of it at the end of the text, else all but the last space (which then leads
  // the next word), else the single space.
  if (ws_end == n) return n;
  if (ws_end - i > 1) return ws_end - 1;
  return ws_end;
}

uint64_t pair_key(int64_t a, int64_t b) {
  return static_cast<uint64_t>(a) << 32 | static_cast<uint64_t>(b);
}

// Decodes one UTF-8 code point at s[k], advancing k; a malformed byte stands for itself.
uint32_t next_code_point(const std::string& s, size_t& k) {
  const unsigned char c = static_cast<unsigned char>(s[k]);
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (len <= 1 || k + static_cast<size_t>(len) > s.size()) {
    ++k;
    return c;
  }
  uint32_t code = c & (0x7F >> len);
  for (int j = 1; j < len; ++j) code = code << 6 | (static_cast<unsigned char>(s[k + j]) & 0x3F);
  k += static_cast<size_t>(len);
  return code;
}

}  // namespace

std::vector<std::string> pretokenize(const std::string& text) {
  std::vector<std::string> pieces;
  for (size_t i = 0; i < text.size();) {
    size_t e = piece_end(text, i);
    pieces.push_back(text.substr(i, e - i));
    i = e;
  }
  return pieces;
}

Tokenizer Tokenizer::load(const std::string& path) {
  const std::string what = cat("tokenizer ", path);
  std::ifstream f(path, std::ios::binary);
  if (!f || std::filesystem::is_directory(path))
    throw UserError(cat(what, ": no such file or not readable"));
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), what);
}

Tokenizer Tokenizer::parse(const std::string& json_text, const std::string& what) {
  const Json root = nn::parse_json(json_text, what);
  auto fail = [&](const std::string& msg) { throw UserError(cat(what, ": ", msg)); };
  const Json* model = root.get("model");
  if (!model || model->kind != Json::Object) fail("no \"model\" object");
  const Json* type = model->get("type");
  if (type && (type->kind != Json::String || type->str != "BPE"))
    fail(cat("model type '", type->kind == Json::String ? type->str : "?",
             "' is not supported (only byte-level BPE)"));
  const Json* fallback = model->get("byte_fallback");
  if (fallback && fallback->kind == Json::Bool && fallback->boolean)
    fail("byte_fallback BPE (SentencePiece style) is not supported, only byte-level BPE");
  const Json* vocab = model->get("vocab");
  if (!vocab || vocab->kind != Json::Object) fail("model.vocab is not an object");

  Tokenizer tk;
  tk.what_ = what;
  auto add = [&](const std::string& token, const Json& id, bool added) {
    if (id.kind != Json::Number || !id.is_int || id.integer < 0 || id.integer >= (1 << 24))
      fail(cat("token '", token, "' has no valid id"));
    const size_t k = static_cast<size_t>(id.integer);
    if (k >= tk.tokens_.size()) {
      tk.tokens_.resize(k + 1);
      tk.added_.resize(k + 1);
    }
    tk.tokens_[k] = token;
    tk.added_[k] = added;
    tk.vocab_[token] = id.integer;
  };
  for (const auto& [token, id] : vocab->members) add(token, id, false);

  if (const Json* merges = model->get("merges")) {
    if (merges->kind != Json::Array) fail("model.merges is not an array");
    int64_t rank = 0;
    for (const Json& m : merges->items) {
      std::string a, b;
      if (m.kind == Json::String) {  // "a b"
        const size_t sp = m.str.find(' ');
        if (sp == std::string::npos || m.str.find(' ', sp + 1) != std::string::npos)
          fail(cat("merge '", m.str, "' is not two tokens separated by a space"));
        a = m.str.substr(0, sp), b = m.str.substr(sp + 1);
      } else if (m.kind == Json::Array && m.items.size() == 2 &&
                 m.items[0].kind == Json::String && m.items[1].kind == Json::String) {
        a = m.items[0].str, b = m.items[1].str;
      } else {
        fail(cat("merge ", rank, " is neither \"a b\" nor [\"a\", \"b\"]"));
      }
      const int64_t ia = tk.id_of(a), ib = tk.id_of(b), im = tk.id_of(a + b);
      if (ia < 0 || ib < 0 || im < 0)
        fail(cat("merge '", a, " ", b, "': '", a, "', '", b, "' or '", a, b,
                 "' is not in the vocabulary"));
      tk.merges_.emplace(pair_key(ia, ib), Merge{rank++, im});  // the first rank counts
    }
  }
  if (const Json* ig = model->get("ignore_merges"); ig && ig->kind == Json::Bool)
    tk.ignore_merges_ = ig->boolean;

  if (const Json* added = root.get("added_tokens"); added && added->kind != Json::Null) {
    if (added->kind != Json::Array) fail("added_tokens is not an array");
    for (const Json& t : added->items) {
      const Json* content = t.get("content");
      const Json* id = t.get("id");
      if (!content || content->kind != Json::String || content->str.empty() || !id)
        fail("an added token lacks its content or id");
      add(content->str, *id, true);
      tk.added_tokens_.emplace_back(content->str, id->integer);
      tk.added_first_[static_cast<unsigned char>(content->str[0])] = true;
    }
    std::stable_sort(tk.added_tokens_.begin(), tk.added_tokens_.end(),
                     [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
  }

  const ByteSymbols& bs = byte_symbols();
  for (int b = 0; b < 256; ++b) tk.byte_id_[b] = tk.id_of(bs.utf8[b]);

  // The beginning-of-text token: what the post-processor puts before a single sequence.
  const Json* pp = root.get("post_processor");
  std::vector<const Json*> processors;
  if (pp && pp->kind == Json::Object) {
    processors.push_back(pp);
    if (const Json* seq = pp->get("processors"); seq && seq->kind == Json::Array)
      for (const Json& p : seq->items) processors.push_back(&p);
  }
  for (const Json* p : processors) {
    const Json* single = p->get("single");
    if (!single || single->kind != Json::Array || single->items.empty()) continue;
    const Json* special = single->items[0].get("SpecialToken");
    const Json* name = special ? special->get("id") : nullptr;
    if (name && name->kind == Json::String) tk.bos_ = tk.id_of(name->str);
  }
  for (const char* name : {"<|begin_of_text|>", "<s>"})
    if (tk.bos_ < 0) tk.bos_ = tk.id_of(name);
  return tk;
}

int64_t Tokenizer::id_of(const std::string& token) const {
  auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

void Tokenizer::encode_piece(const std::string& piece, std::vector<int64_t>& out) const {
  const ByteSymbols& bs = byte_symbols();
  if (ignore_merges_) {  // a piece that is a token is that token, whatever the merges say
    std::string symbols;
    for (unsigned char b : piece) symbols += bs.utf8[b];
    if (int64_t id = id_of(symbols); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  std::vector<int64_t> ids;
  ids.reserve(piece.size());
  for (unsigned char b : piece) {
    if (byte_id_[b] < 0)
      throw UserError(cat(what_, ": no token for the byte 0x", std::hex, static_cast<int>(b),
                          " (symbol '", bs.utf8[b], "')"));
    ids.push_back(byte_id_[b]);
  }
  // Merge the adjacent pair of lowest rank, all its occurrences left to right, until none has a
  // rank.
  std::vector<int64_t> next;
  while (ids.size() > 1) {
    int64_t best = std::numeric_limits<int64_t>::max();
    const Merge* merge = nullptr;
    uint64_t best_key = 0;
    for (size_t k = 0; k + 1 < ids.size(); ++k) {
      auto it = merges_.find(pair_key(ids[k], ids[k + 1]));
      if (it != merges_.end() && it->second.rank < best) {
        best = it->second.rank;
        merge = &it->second;
        best_key = it->first;
      }
    }
    if (!merge) break;
    next.clear();
    for (size_t k = 0; k < ids.size(); ++k) {
      if (k + 1 < ids.size() && pair_key(ids[k], ids[k + 1]) == best_key) {
        next.push_back(merge->id);
        ++k;
      } else {
        next.push_back(ids[k]);
      }
    }
    ids.swap(next);
  }
  out.insert(out.end(), ids.begin(), ids.end());
}

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool add_bos) const {
  std::vector<int64_t> out;
  if (add_bos) {
    if (bos_ < 0) throw UserError(cat(what_, ": no beginning-of-text token to add"));
    out.push_back(bos_);
  }
  auto plain = [&](size_t from, size_t to) {
    if (from < to)
      for (const std::string& piece : pretokenize(text.substr(from, to - from)))
        encode_piece(piece, out);
  };
  size_t start = 0;  // the text not yet encoded begins here
  for (size_t i = 0; i < text.size();) {
    const std::pair<std::string, int64_t>* hit = nullptr;
    if (added_first_[static_cast<unsigned char>(text[i])])
      for (const auto& a : added_tokens_)
        if (text.compare(i, a.first.size(), a.first) == 0) {
          hit = &a;
          break;
        }
    if (!hit) {
      ++i;
      continue;
    }
    plain(start, i);
    out.push_back(hit->second);
    i += hit->first.size();
    start = i;
  }
  plain(start, text.size());
  return out;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skip_special) const {
  const ByteSymbols& bs = byte_symbols();
  std::string out;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size() || tokens_[static_cast<size_t>(id)].empty())
      throw UserError(cat(what_, ": token id ", id, " is not in the vocabulary (size ",
                          vocab_size(), ")"));
    const std::string& token = tokens_[static_cast<size_t>(id)];
    if (added_[static_cast<size_t>(id)]) {
      if (!skip_special) out += token;
      continue;
    }
    for (size_t k = 0; k < token.size();) {
      const size_t from = k;
      const uint32_t code = next_code_point(token, k);
      if (code < bs.byte_of.size() && bs.byte_of[code] >= 0)
        out += static_cast<char>(bs.byte_of[code]);
      else  // not a byte symbol: the token's own text
        out.append(token, from, k - from);
    }
  }
  return out;
}

}  // namespace tempo::llm
