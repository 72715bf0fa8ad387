// `tempo tokenize`: a tokenizer.json's encoding (or decoding) of JSON lines, for comparing with
// other implementations and for preparing prompts.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "llm/tokenizer.h"
#include "nn/json.h"
#include "util/error.h"

namespace {

using namespace tempo;

const char* kUsage =
    "usage: tempo tokenize --tokenizer FILE --json-lines IN [--decode] [--no-special]\n"
    "Encodes each line of IN (a JSON string) with a byte-level BPE tokenizer.json, printing one\n"
    "JSON array of token ids per line; the file's post-processor adds its special tokens, as\n"
    "Hugging Face's encode(text) does. IN may be - for standard input.\n\n"
    "  --tokenizer FILE  the tokenizer.json\n"
    "  --json-lines IN   one JSON string per line (with --decode: one JSON array of ids)\n"
    "  --decode          decode arrays of ids into JSON strings instead\n"
    "  --no-special      encode without the post-processor's special tokens; decode without\n"
    "                    the added tokens' text\n";

struct Args {
  std::string tokenizer, input;
  bool decode = false, no_special = false;
};

Args parse_command_line(int argc, char** argv, bool& help) {
  Args r;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "--help" || a == "-h") {
      help = true;
      return r;
    }
    if (a == "--decode") {
      r.decode = true;
    } else if (a == "--no-special") {
      r.no_special = true;
    } else if ((a == "--tokenizer" || a == "--json-lines") && k + 1 < argc) {
      (a == "--tokenizer" ? r.tokenizer : r.input) = argv[++k];
    } else {
      throw UserError(
          cat("unknown option or missing value: ", a, " (try `tempo tokenize --help`)"));
    }
  }
  if (r.tokenizer.empty()) throw UserError("tempo tokenize needs --tokenizer FILE");
  if (r.input.empty()) throw UserError("tempo tokenize needs --json-lines IN");
  return r;
}

std::string ids_json(const std::vector<int64_t>& ids) {
  std::string s = "[";
  for (size_t k = 0; k < ids.size(); ++k) s += cat(k ? "," : "", ids[k]);
  return s + "]";
}

// The ids of a JSON array line; `where` names the line in errors.
std::vector<int64_t> ids_of(const nn::Json& v, const std::string& where) {
  if (v.kind != nn::Json::Array) throw UserError(cat(where, " is not a JSON array of token ids"));
  std::vector<int64_t> ids;
  for (const nn::Json& x : v.items) {
    if (x.kind != nn::Json::Number || !x.is_int)
      throw UserError(cat(where, " holds something that is not an integer token id"));
    ids.push_back(x.integer);
  }
  return ids;
}

}  // namespace

int run_tokenize_command(int argc, char** argv) {
  bool help = false;
  const Args a = parse_command_line(argc, argv, help);
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const llm::Tokenizer tk = llm::Tokenizer::load(a.tokenizer);
  std::ifstream file;
  if (a.input != "-") {
    file.open(a.input, std::ios::binary);
    if (!file) throw UserError(cat("--json-lines ", a.input, ": no such file or not readable"));
  }
  std::istream& in = a.input == "-" ? std::cin : file;
  std::string line, all;  // printed at the end: a bad line leaves no partial output
  for (int64_t n = 1; std::getline(in, line); ++n) {
    const std::string where = cat(a.input == "-" ? "standard input" : a.input, " line ", n);
    const nn::Json v = nn::parse_json(line, where);
    std::string out;
    if (a.decode) {
      out = nn::json_quote(tk.decode(ids_of(v, where), a.no_special));
    } else {
      if (v.kind != nn::Json::String) throw UserError(cat(where, " is not a JSON string"));
      out = ids_json(tk.encode(v.str, !a.no_special));
    }
    all += out + '\n';
  }
  std::cout << all << std::flush;
  return 0;
}
