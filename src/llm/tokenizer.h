// A byte-level BPE tokenizer (Llama 3, GPT-2 family) read from a Hugging Face tokenizer.json,
// encoding as Hugging Face's `tokenizers` does:
//   1. added tokens (e.g. <|begin_of_text|>) are split out of the text first, leftmost-longest;
//   2. the text between them goes through the file's pre_tokenizer: Split (a regex compiled with
//      PCRE2 in Unicode mode, so \p{L}, \p{N} and \s follow the Unicode categories; its
//      behavior and invert honoured), ByteLevel (GPT-2's regex unless use_regex is false, and
//      add_prefix_space) and Sequence of these; no pre_tokenizer leaves the text whole;
//   3. each piece's bytes are mapped to GPT-2's printable byte symbols and merged pair by pair,
//      lowest merge rank first;
//   4. the post-processor's template (TemplateProcessing's single, Roberta / Bert's cls and sep,
//      or a Sequence of processors) puts its special tokens around the ids; without one, none.
// Decoding maps the symbols back to bytes, so decode(encode(s)) == s for any bytes when every byte
// has a symbol.
//
// Not supported (a UserError at load): normalizers, other pre-tokenizers and post-processors,
// and non-byte-level models. Added tokens match exactly (their lstrip / rstrip / single_word flags
// are ignored).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tempo::llm {

// Token ids and vocabulary sizes read from a file stay below this (larger than any published
// vocabulary), so that a small file cannot make the tokenizer allocate gigabytes.
constexpr int64_t kMaxVocab = int64_t{1} << 21;

class PreTokenizer;  // the file's pre_tokenizer (tokenizer.cpp)

class Tokenizer {
 public:
  // UserError when the file does not exist, does not parse, or is not a byte-level BPE model.
  static Tokenizer load(const std::string& path);
  // The same from the file's text; `what` names it in errors.
  static Tokenizer parse(const std::string& json_text, const std::string& what);

  // With add_special_tokens, the post-processor's special tokens around the text's (as Hugging
  // Face's encode(text) by default).
  std::vector<int64_t> encode(const std::string& text, bool add_special_tokens = true) const;
  // The bytes of the tokens; added tokens as their text, special ones only unless skip_special.
  // UserError for an id that is not a token.
  std::string decode(const std::vector<int64_t>& ids, bool skip_special = false) const;

  int64_t vocab_size() const { return static_cast<int64_t>(tokens_.size()); }  // largest id + 1
  // The beginning-of-text token: the post-processor's first special token, else an added
  // <|begin_of_text|> or <s>; -1 when there is none. encode() adds only the post-processor's.
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
  std::vector<uint8_t> added_;       // by id: 0, 1 an added token, 2 a special added token
  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank, merged id
  std::vector<std::pair<std::string, int64_t>> added_tokens_;  // longest first
  std::array<bool, 256> added_first_{};                        // the first bytes of added tokens
  std::array<int64_t, 256> byte_id_{};       // the id of each byte's symbol, -1 if none
  std::shared_ptr<const PreTokenizer> pre_;  // null: the text is one piece
  std::vector<int64_t> prefix_, suffix_;     // the post-processor's tokens around a sequence
  bool ignore_merges_ = false;
  int64_t bos_ = -1;
};

// Llama 3's pre-tokenization of text without added tokens (a Split, Isolated, on the regex
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+): the pieces, which concatenate to text.
std::vector<std::string> pretokenize(const std::string& text);

}  // namespace tempo::llm
