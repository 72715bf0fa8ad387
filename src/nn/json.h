// A small JSON reader for the files models come with (safetensors headers, config.json,
// tokenizer.json): a document becomes a tree of Json values, object members in file order.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tempo::nn {

struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool boolean = false;
  double number = 0;
  bool is_int = false;  // written without a fraction or exponent, and fits in int64
  int64_t integer = 0;
  std::string str;  // UTF-8
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  // Declared here, defined in json.cpp: clang cannot decide whether pair<string, Json> is
  // default-constructible while it checks Json's own inline default constructor.
  Json();

  // The member named k of an object (the first if repeated); null when absent or not an object.
  const Json* get(const std::string& k) const;
};

// Parses a whole document. Malformed input throws UserError "malformed <what>: <reason> at byte
// <offset>". \u escapes become UTF-8, surrogate pairs joined into one code point.
Json parse_json(const std::string& text, const std::string& what);

// s as a JSON string literal, quotes included.
std::string json_quote(const std::string& s);

}  // namespace tempo::nn
