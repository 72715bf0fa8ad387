// Encoding and decoding of any bytes with a valid byte-level BPE tokenizer (every byte has a
// symbol; a few merges and added tokens; Llama 3's pre-tokenizer and template). The first input
// byte picks the mode:
//   even: the rest is text (a multiple of 4: with the beginning-of-text token); every id is a
//         token and decode(encode(text)) == text;
//   odd:  the rest is a list of little-endian signed 16-bit ids to decode (a UserError for a
//   non-token).
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "llm/tokenizer.h"
#include "util/error.h"

namespace {

using tempo::cat;

// GPT-2's printable symbol of each byte: printable Latin-1 bytes stand for themselves, the rest
// for the code points from 256 up, in byte order.
std::string byte_symbol(int b, int* next_extra) {
  const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
  const unsigned cp = printable ? static_cast<unsigned>(b) : static_cast<unsigned>((*next_extra)++);
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// Escapes for a JSON string (the symbols hold '"' and '\\').
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string tokenizer_json() {
  std::string vocab, merges;
  int next_extra = 256;
  std::vector<std::string> sym(256);
  for (int b = 0; b < 256; ++b) {
    sym[b] = byte_symbol(b, &next_extra);
    vocab += cat(b ? "," : "", quoted(sym[b]), ":", b);
  }
  // Merges building "th", "the", " the", "in", "ing", "er" (Ġ is the space's symbol).
  const char* pairs[][2] = {{"t", "h"}, {"th", "e"}, {"\xc4\xa0", "the"},
                            {"i", "n"}, {"in", "g"}, {"e", "r"}};
  int id = 256;
  for (const auto& p : pairs) {
    vocab += cat(",", quoted(std::string(p[0]) + p[1]), ":", id++);
    merges += cat(merges.empty() ? "" : ",", quoted(std::string(p[0]) + " " + p[1]));
  }
  auto added = [](int i, const char* text) {
    return cat(R"({"id":)", i, R"(,"content":")", text, R"(","special":true})");
  };
  const std::string pre =
      R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":)"
      R"("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|)"
      R"( ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},)"
      R"("behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,)"
      R"("use_regex":false}]})";
  const std::string post =
      R"({"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"B","type_id":0}},)"
      R"({"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"B":{"id":"B","ids":[300]}}})";
  return cat(R"({"added_tokens":[)", added(300, "<|begin_of_text|>"), ",",
             added(301, "<|end_of_text|>"), R"(],"pre_tokenizer":)", pre,
             R"(,"post_processor":)", post, R"(,"model":{"type":"BPE","vocab":{)", vocab,
             R"(},"merges":[)", merges, "]}}");
}

const tempo::llm::Tokenizer& tokenizer() {
  static const tempo::llm::Tokenizer tok = tempo::llm::Tokenizer::parse(tokenizer_json(), "codec");
  return tok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const tempo::llm::Tokenizer& tok = tokenizer();
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    const bool bos = data[0] % 4 == 0;
    std::vector<int64_t> ids = tok.encode(rest, bos);
    for (int64_t id : ids) tempo::fuzz::check(id >= 0 && id < tok.vocab_size(), "id in the vocab");
    // Added tokens in the text decode as their text, the beginning-of-text token included.
    const std::string back = tok.decode(ids);
    tempo::fuzz::check(back == (bos ? "<|begin_of_text|>" : "") + rest,
                       "decode(encode(text)) == text");
    return 0;
  }
  std::vector<int64_t> ids;
  for (size_t k = 0; k + 1 < rest.size(); k += 2)
    ids.push_back(static_cast<int16_t>(static_cast<uint8_t>(rest[k]) |
                                       static_cast<uint8_t>(rest[k + 1]) << 8));
  tempo::fuzz::expect_user_errors_only([&] { tok.decode(ids, data[0] % 4 == 3); });
  return 0;
}
