// A byte-level BPE tokenizer (Llama 3, GPT-2 family) read from a Hugging Face tokenizer.json.
// Encoding: added tokens (e.g. <|begin_of_text|>) are matched literally first; the text between
// them is split by Llama 3's pre-tokenization pattern, each piece's bytes are mapped to GPT-2's
// printable byte symbols and merged pair by pair, lowest merge rank first. Decoding maps the
// symbols back to bytes, so decode(encode(s)) == s for any bytes when every byte has a symbol.
//
// Simplifications: the pre-tokenizer is always Llama 3's pattern (the file's pre_tokenizer and
// normalizer are not read), and every non-ASCII UTF-8 byte counts as a letter (the pattern's
// \p{L}), so non-ASCII digits, punctuation and spaces group with letters. Added tokens match
// exactly (their lstrip / rstrip / single_word flags are ignored).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tempo::llm {

class Tokenizer {
 public:
  // UserError when the file does not exist, does not parse, or is not a byte-level BPE model.
  static Tokenizer load(const std::string& path);
  // The same from the file's text; `what` names it in errors.
  static Tokenizer parse(const std::string& json_text, const std::string& what);

  // With add_bos, the beginning-of-text token first (UserError if the tokenizer has none).
  std::vector<int64_t> encode(const std::string& text, bool add_bos = false) const;
  // The bytes of the tokens; added (special) tokens as their text unless skip_special.
  // UserError for an id that is not a token.
  std::string decode(const std::vector<int64_t>& ids, bool skip_special = false) const;

  int64_t vocab_size() const { return static_cast<int64_t>(tokens_.size()); }  // largest id + 1
  // The beginning-of-text token (from the post-processor's template, else an added
  // <|begin_of_text|> or <s>); -1 when there is none.
  int64_t bos() const { return bos_; }
  // The id of a token as the file spells it (byte symbols, or an added token's text); -1 if none.
  int64_t id_of(const std::string& token) const;

 private:
  struct Merge {
    int64_t rank, id;
  };
  void encode_piece(const std::string& piece, std::vector<int64_t>& out) const;

  std::string what_;
  std::vector<std::string> tokens_;  // by id; empty where no token has the id
  std::vector<bool> added_;          // by id: an added token, decoded as its text
  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank, merged id
  std::vector<std::pair<std::string, int64_t>> added_tokens_;  // longest first
  std::array<bool, 256> added_first_{};  // the first bytes of added tokens
  std::array<int64_t, 256> byte_id_{};  // the id of each byte's symbol, -1 if none
  bool ignore_merges_ = false;
  int64_t bos_ = -1;
};

// Llama 3's pre-tokenization of text without added tokens (the regex
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+ matched by hand): the pieces, which concatenate to text.
std::vector<std::string> pretokenize(const std::string& text);

}  // namespace tempo::llm
