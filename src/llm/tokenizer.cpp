// Byte-level BPE: tokenizer.json reading, pre-tokenization (PCRE2), merging, post-processing
// templates and decoding.
#include "llm/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

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

// Hugging Face's Split behaviours: what becomes of the matches among the rest of the text.
enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// The length of the UTF-8 sequence that starts with byte c (1 for a byte that starts none).
size_t utf8_length(unsigned char c) {
  return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF8 ? 4 : 1;
}

// Unicode's White_Space characters, which \s matches in Hugging Face's patterns (PCRE2's \s also
// matches U+180E, a format character since Unicode 6.3).
const char* const kWhiteSpace =
    "\\t-\\r\\x20\\x85\\xA0\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
    "\\x{3000}";

// The pattern with \s spelled as kWhiteSpace, and \S outside brackets as its complement (inside
// brackets \S stays PCRE2's).
std::string with_white_space(const std::string& pattern) {
  std::string out;
  bool in_class = false;
  for (size_t k = 0; k < pattern.size(); ++k) {
    const char c = pattern[k];
    if (c == '\\' && k + 1 < pattern.size()) {
      const char e = pattern[++k];
      if (e == 's')
        out += in_class ? cat(kWhiteSpace) : cat("[", kWhiteSpace, "]");
      else if (e == 'S' && !in_class)
        out += cat("[^", kWhiteSpace, "]");
      else
        out += {c, e};
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      if (k + 1 < pattern.size() && pattern[k + 1] == '^') out += pattern[++k];
      if (k + 1 < pattern.size() && pattern[k + 1] == ']') out += pattern[++k];  // a literal ]
      continue;
    }
    if (c == '[' && in_class && k + 1 < pattern.size() && pattern[k + 1] == ':') {
      const size_t end = pattern.find(":]", k + 2);  // a POSIX class such as [:alpha:]
      if (end != std::string::npos) {
        out.append(pattern, k, end + 2 - k);
        k = end + 1;
        continue;
      }
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

// A PCRE2 pattern in UTF mode with Unicode properties (\p{L}, \s, \d follow the Unicode
// categories, as in Hugging Face's Oniguruma patterns); invalid UTF-8 in the text matches nothing.
class Regex {
 public:
  Regex(const std::string& pattern, bool literal, const std::string& what) {
    int err = 0;
    PCRE2_SIZE at = 0;
    const uint32_t options =
        PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    const std::string p = literal ? pattern : with_white_space(pattern);
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(), options, &err, &at,
                          nullptr);
    if (!code_)
      throw UserError(cat(what, ": the pre-tokenizer's pattern '", pattern,
                          "' does not compile: ", message(err), " at offset ", at));
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // without the JIT, the interpreter
  }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex() { pcre2_code_free(code_); }

  // The [begin, end) of each non-empty match in s, left to right (an empty match moves on by one
  // character, as Hugging Face's find_iter does).
  std::vector<std::pair<size_t, size_t>> matches(const std::string& s) const {
    std::vector<std::pair<size_t, size_t>> out;
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
    const auto* text = reinterpret_cast<PCRE2_SPTR>(s.data());
    for (size_t from = 0; from <= s.size();) {
      const int rc = pcre2_match(code_, text, s.size(), from, 0, md, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        pcre2_match_data_free(md);
        throw UserError(
            cat("tokenizer: the pre-tokenizer's pattern failed on the text: ", message(rc)));
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      if (ov[1] > ov[0]) {
        out.emplace_back(ov[0], ov[1]);
        from = ov[1];
      } else if (ov[0] >= s.size()) {
        break;
      } else {
        from =
            ov[0] + std::min(utf8_length(static_cast<unsigned char>(s[ov[0]])), s.size() - ov[0]);
      }
    }
    pcre2_match_data_free(md);
    return out;
  }

 private:
  static std::string message(int code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(code, buf, sizeof buf);
    return reinterpret_cast<const char*>(buf);
  }
  pcre2_code* code_ = nullptr;
};

// Hugging Face's Split of one piece: the matches (or, inverted, the text between them) kept,
// removed or merged with their neighbours as `b` says; empty pieces dropped.
std::vector<std::string> split(const std::string& s, const Regex& re, Behavior b, bool invert) {
  std::vector<std::pair<std::pair<size_t, size_t>, bool>> parts;  // ([begin, end), is a match)
  size_t prev = 0;
  for (const auto& [from, to] : re.matches(s)) {
    if (from > prev) parts.push_back({{prev, from}, invert});
    parts.push_back({{from, to}, !invert});
    prev = to;
  }
  if (prev < s.size()) parts.push_back({{prev, s.size()}, invert});
  std::vector<std::pair<size_t, size_t>> pieces;
  if (b == Behavior::MergedWithNext) std::reverse(parts.begin(), parts.end());
  bool previous_match = false;
  for (const auto& [range, match] : parts) {
    const bool merge = b == Behavior::Contiguous ? match == previous_match
                       : b == Behavior::MergedWithPrevious || b == Behavior::MergedWithNext
                           ? match && !previous_match
                           : false;
    previous_match = match;
    if (b == Behavior::Removed && match) continue;
    if (merge && !pieces.empty()) {
      if (b == Behavior::MergedWithNext)
        pieces.back().first = range.first;
      else
        pieces.back().second = range.second;
    } else {
      pieces.push_back(range);
    }
  }
  if (b == Behavior::MergedWithNext) std::reverse(pieces.begin(), pieces.end());
  std::vector<std::string> out;
  for (const auto& [from, to] : pieces)
    if (to > from) out.push_back(s.substr(from, to - from));
  return out;
}

const char* const kLlama3Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// GPT-2's pattern, which the ByteLevel pre-tokenizer splits on unless use_regex is false.
const char* const kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
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

// The file's pre_tokenizer: steps applied in order, each to every piece the previous made.
class PreTokenizer {
 public:
  struct Step {
    std::shared_ptr<const Regex> regex;  // null: no split
    Behavior behavior = Behavior::Isolated;
    bool invert = false;
    bool add_prefix_space = false;  // ByteLevel's: a space before a piece that has none
  };
  std::vector<Step> steps;

  std::vector<std::string> run(const std::string& text) const {
    std::vector<std::string> pieces{text}, next;
    for (const Step& st : steps) {
      next.clear();
      for (std::string& p : pieces) {
        if (st.add_prefix_space && (p.empty() || p[0] != ' ')) p.insert(p.begin(), ' ');
        if (!st.regex) {
          next.push_back(std::move(p));
          continue;
        }
        for (std::string& q : split(p, *st.regex, st.behavior, st.invert))
          next.push_back(std::move(q));
      }
      pieces.swap(next);
    }
    return pieces;
  }
};

namespace {

std::shared_ptr<const Regex> regex(const std::string& pattern, bool literal,
                                   const std::string& what) {
  return std::make_shared<const Regex>(pattern, literal, what);
}

bool flag(const Json& j, const char* key, bool otherwise) {
  const Json* v = j.get(key);
  return v && v->kind == Json::Bool ? v->boolean : otherwise;
}

// Appends the steps of one pre_tokenizer object (a Sequence's recursively).
void read_pre_tokenizer(const Json& j, PreTokenizer& pre, const std::string& what, int depth) {
  auto fail = [&](const std::string& msg) { throw UserError(cat(what, ": pre_tokenizer: ", msg)); };
  const Json* type = j.get("type");
  if (j.kind != Json::Object || !type || type->kind != Json::String)
    fail("an entry is not an object with a \"type\"");
  if (depth > 16) fail("Sequences nested too deeply");
  const std::string& t = type->str;
  if (t == "Sequence") {
    const Json* list = j.get("pretokenizers");
    if (!list || list->kind != Json::Array) fail("a Sequence without a \"pretokenizers\" array");
    for (const Json& p : list->items) read_pre_tokenizer(p, pre, what, depth + 1);
  } else if (t == "ByteLevel") {
    PreTokenizer::Step st;
    st.add_prefix_space = flag(j, "add_prefix_space", true);
    if (flag(j, "use_regex", true)) st.regex = regex(kGpt2Pattern, false, what);
    pre.steps.push_back(std::move(st));
  } else if (t == "Split") {
    const Json* pattern = j.get("pattern");
    const Json* re = pattern ? pattern->get("Regex") : nullptr;
    const Json* str = pattern ? pattern->get("String") : nullptr;
    const Json* p = re ? re : str;
    if (!p || p->kind != Json::String)
      fail("a Split without a {\"Regex\"} or {\"String\"} pattern");
    const Json* b = j.get("behavior");
    const std::string behavior = b && b->kind == Json::String ? b->str : "";
    const std::array<const char*, 5> names = {"Removed", "Isolated", "MergedWithPrevious",
                                              "MergedWithNext", "Contiguous"};
    auto it = std::find(names.begin(), names.end(), behavior);
    if (it == names.end())
      fail(cat("Split behavior '", behavior,
               "' is not one of Removed, Isolated, "
               "MergedWithPrevious, MergedWithNext, Contiguous"));
    PreTokenizer::Step st;
    st.regex = regex(p->str, p == str, what);
    st.behavior = static_cast<Behavior>(it - names.begin());
    st.invert = flag(j, "invert", false);
    pre.steps.push_back(std::move(st));
  } else {
    fail(cat("type '", t, "' is not supported (only Split, ByteLevel and Sequence)"));
  }
}

// The file's pre-tokenizer (null when it has none); normalizers, which would change the text
// first, are not supported.
std::shared_ptr<const PreTokenizer> read_pre_tokenization(const Json& root,
                                                          const std::string& what) {
  if (const Json* n = root.get("normalizer"); n && n->kind != Json::Null) {
    const Json* list = n->get("normalizers");
    if (!list || list->kind != Json::Array || !list->items.empty())
      throw UserError(cat(what, ": normalizers are not supported (the normalizer must be null)"));
  }
  const Json* pre = root.get("pre_tokenizer");
  if (!pre || pre->kind == Json::Null) return nullptr;
  auto p = std::make_shared<PreTokenizer>();
  read_pre_tokenizer(*pre, *p, what, 0);
  return p;
}

// The ids of a TemplateProcessing's special token `name` (from its special_tokens map).
std::vector<int64_t> template_ids(const Json& pp, const std::string& name, const Tokenizer& tk,
                                  const std::string& what) {
  const Json* specials = pp.get("special_tokens");
  const Json* entry = specials ? specials->get(name) : nullptr;
  const Json* ids = entry ? entry->get("ids") : nullptr;
  if (!ids || ids->kind != Json::Array)
    throw UserError(cat(what, ": post_processor: the template's special token '", name,
                        "' has no ids in special_tokens"));
  std::vector<int64_t> out;
  for (const Json& id : ids->items) {
    if (id.kind != Json::Number || !id.is_int || id.integer < 0 || id.integer >= tk.vocab_size())
      throw UserError(cat(what, ": post_processor: the special token '", name,
                          "' has an id that is not in the vocabulary"));
    out.push_back(id.integer);
  }
  return out;
}

// A [token, id] pair of Roberta / Bert processing.
int64_t pair_id(const Json& pp, const char* key, const Tokenizer& tk, const std::string& what) {
  const Json* p = pp.get(key);
  if (!p || p->kind != Json::Array || p->items.size() != 2 || !p->items[1].is_int ||
      p->items[1].integer < 0 || p->items[1].integer >= tk.vocab_size())
    throw UserError(
        cat(what, ": post_processor: \"", key, "\" is not a [token, id] in the vocabulary"));
  return p->items[1].integer;
}

// The tokens the post_processor `pp` puts before and after a single sequence, wrapped around
// those of the processors before it.
void read_post_processor(const Json& pp, const Tokenizer& tk, const std::string& what, int depth,
                         std::vector<int64_t>& prefix, std::vector<int64_t>& suffix) {
  auto fail = [&](const std::string& msg) {
    throw UserError(cat(what, ": post_processor: ", msg));
  };
  const Json* type = pp.get("type");
  if (pp.kind != Json::Object || !type || type->kind != Json::String)
    fail("an entry is not an object with a \"type\"");
  if (depth > 16) fail("Sequences nested too deeply");
  const std::string& t = type->str;
  std::vector<int64_t> before, after;
  if (t == "Sequence") {
    const Json* list = pp.get("processors");
    if (!list || list->kind != Json::Array) fail("a Sequence without a \"processors\" array");
    for (const Json& p : list->items) read_post_processor(p, tk, what, depth + 1, prefix, suffix);
    return;
  } else if (t == "TemplateProcessing") {
    const Json* single = pp.get("single");
    if (!single || single->kind != Json::Array) fail("a TemplateProcessing without \"single\"");
    bool seen_sequence = false;
    for (const Json& item : single->items) {
      const Json* special = item.get("SpecialToken");
      const Json* name = special ? special->get("id") : nullptr;
      if (item.get("Sequence")) {
        seen_sequence = true;
      } else if (name && name->kind == Json::String) {
        for (int64_t id : template_ids(pp, name->str, tk, what))
          (seen_sequence ? after : before).push_back(id);
      } else {
        fail("a template item is neither a SpecialToken nor a Sequence");
      }
    }
  } else if (t == "RobertaProcessing" || t == "BertProcessing") {
    before.push_back(pair_id(pp, "cls", tk, what));
    after.push_back(pair_id(pp, "sep", tk, what));
  } else if (t != "ByteLevel") {  // ByteLevel's post-processing only trims offsets
    fail(cat("type '", t,
             "' is not supported (only TemplateProcessing, RobertaProcessing, "
             "BertProcessing, ByteLevel and Sequence)"));
  }
  prefix.insert(prefix.begin(), before.begin(), before.end());
  suffix.insert(suffix.end(), after.begin(), after.end());
}

}  // namespace

std::vector<std::string> pretokenize(const std::string& text) {
  static const Regex re(kLlama3Pattern, false, "Llama 3's pattern");
  return split(text, re, Behavior::Isolated, false);
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
  auto add = [&](const std::string& token, const Json& id, uint8_t added) {
    if (id.kind != Json::Number || !id.is_int || id.integer < 0)
      fail(cat("token '", token, "' has no valid id"));
    if (id.integer >= kMaxVocab)
      fail(cat("token '", token, "' has the id ", id.integer, ", past the limit of ", kMaxVocab,
               " tokens"));
    const size_t k = static_cast<size_t>(id.integer);
    if (k >= tk.tokens_.size()) {
      tk.tokens_.resize(k + 1);
      tk.added_.resize(k + 1);
    }
    tk.tokens_[k] = token;
    tk.added_[k] = added;
    tk.vocab_[token] = id.integer;
  };
  for (const auto& [token, id] : vocab->members) add(token, id, 0);

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
      } else if (m.kind == Json::Array && m.items.size() == 2 && m.items[0].kind == Json::String &&
                 m.items[1].kind == Json::String) {
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
      const Json* special = t.get("special");
      add(content->str, *id, special && special->kind == Json::Bool && special->boolean ? 2 : 1);
      tk.added_tokens_.emplace_back(content->str, id->integer);
      tk.added_first_[static_cast<unsigned char>(content->str[0])] = true;
    }
    std::stable_sort(tk.added_tokens_.begin(), tk.added_tokens_.end(),
                     [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
  }

  const ByteSymbols& bs = byte_symbols();
  for (int b = 0; b < 256; ++b) tk.byte_id_[b] = tk.id_of(bs.utf8[b]);

  // Real vocabularies are dense: a few ids far apart would make tokens_ huge.
  if (tk.vocab_size() > 2 * static_cast<int64_t>(tk.vocab_.size()) + 1024)
    fail(cat("the largest token id is ", tk.vocab_size() - 1, " but there are only ",
             tk.vocab_.size(), " tokens"));

  tk.pre_ = read_pre_tokenization(root, what);
  if (const Json* pp = root.get("post_processor"); pp && pp->kind != Json::Null)
    read_post_processor(*pp, tk, what, 0, tk.prefix_, tk.suffix_);
  if (!tk.prefix_.empty()) tk.bos_ = tk.prefix_[0];
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

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool add_special_tokens) const {
  std::vector<int64_t> out;
  if (add_special_tokens) out = prefix_;
  auto plain = [&](size_t from, size_t to) {
    if (from >= to) return;
    const std::string chunk = text.substr(from, to - from);
    if (!pre_) return encode_piece(chunk, out);
    for (const std::string& piece : pre_->run(chunk)) encode_piece(piece, out);
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
  if (add_special_tokens) out.insert(out.end(), suffix_.begin(), suffix_.end());
  return out;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skip_special) const {
  const ByteSymbols& bs = byte_symbols();
  std::string out;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size() || tokens_[static_cast<size_t>(id)].empty())
      throw UserError(
          cat(what_, ": token id ", id, " is not in the vocabulary (size ", vocab_size(), ")"));
    const std::string& token = tokens_[static_cast<size_t>(id)];
    if (const uint8_t added = added_[static_cast<size_t>(id)]) {
      if (!skip_special || added == 1) out += token;
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
