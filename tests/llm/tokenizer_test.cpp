// The byte-level BPE tokenizer (llm/tokenizer.h) on a small tokenizer.json written here: Llama 3's
// pre-tokenization (and the pre-tokenizers' other forms), merges applied by rank, added tokens,
// post-processor templates, byte round trips, and errors. tests/tokenizer/compare_hf.py compares
// it with Hugging Face's own on random text.
#include "llm/tokenizer.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "nn/json.h"
#include "util/error.h"
#include "expect_error.h"

namespace tempo::llm {
namespace {

namespace fs = std::filesystem;

// GPT-2's symbol for each byte, computed the way its reference describes it.
std::string symbol(int b) {
  int code = b;
  if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
    code = 256;
    for (int k = 0; k < b; ++k)
      if (!((k >= 33 && k <= 126) || (k >= 161 && k <= 172) || (k >= 174 && k <= 255))) ++code;
  }
  if (code < 0x80) return std::string(1, static_cast<char>(code));
  return {static_cast<char>(0xC0 | (code >> 6)), static_cast<char>(0x80 | (code & 0x3F))};
}

const char* const kLlama3 = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|)"
                            R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

const char* const kTemplate =
    R"({"type":"Sequence","processors":[{"type":"ByteLevel"},)"
    R"({"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<|begin_of_text|>",)"
    R"("type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"<|begin_of_text|>":)"
    R"({"id":"<|begin_of_text|>","ids":[400],"tokens":["<|begin_of_text|>"]}}}]})";

struct Spec {
  std::vector<std::pair<std::string, std::string>> merges;  // symbol strings, in rank order
  bool pair_form = false;
  bool ignore_merges = false;
  std::vector<std::string> extra_vocab;  // tokens without a merge path
  std::string type = "BPE";
  // Llama 3's: its regex split out, then bytes to symbols.
  std::string pre_tokenizer = R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":)"
                              R"({"Regex":)" + nn::json_quote(kLlama3) + R"(},"behavior":)"
                              R"("Isolated","invert":false},{"type":"ByteLevel",)"
                              R"("add_prefix_space":false,"use_regex":false}]})";
  std::string post_processor;  // default: Llama 3's, <|begin_of_text|> first
};

const int kBos = 400, kEot = 401;

// Ids: bytes 0..255 by value, then merged tokens in merge order, then extra_vocab; the added
// tokens <|begin_of_text|> and <|eot_id|> at 400 and 401; the template puts the first before a
// sequence.
std::string tokenizer_json(const Spec& s) {
  std::string vocab;
  int next = 0;
  for (int b = 0; b < 256; ++b) vocab += cat(b ? "," : "", nn::json_quote(symbol(b)), ":", next++);
  for (const auto& [a, b] : s.merges) vocab += cat(",", nn::json_quote(a + b), ":", next++);
  for (const auto& t : s.extra_vocab) vocab += cat(",", nn::json_quote(t), ":", next++);
  std::string merges;
  for (size_t k = 0; k < s.merges.size(); ++k) {
    const auto& [a, b] = s.merges[k];
    merges += k ? "," : "";
    merges += s.pair_form ? cat("[", nn::json_quote(a), ",", nn::json_quote(b), "]")
                          : nn::json_quote(a + " " + b);
  }
  auto added = [](int id, const char* text) {
    return cat(R"({"id":)", id, R"(,"content":")", text,
               R"(","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,)"
               R"("special":true})");
  };
  return cat(R"({"version":"1.0","added_tokens":[)", added(kBos, "<|begin_of_text|>"), ",",
             added(kEot, "<|eot_id|>"), R"(],"normalizer":null,"pre_tokenizer":)",
             s.pre_tokenizer, R"(,"post_processor":)",
             s.post_processor.empty() ? kTemplate : s.post_processor, ",",
             R"("model":{"type":")", s.type, R"(","dropout":null,"unk_token":null,)",
             R"("byte_fallback":false,"ignore_merges":)", s.ignore_merges ? "true" : "false",
             R"(,"vocab":{)", vocab, R"(},"merges":[)", merges, "]}}");
}

const std::string G = symbol(' ');  // "Ġ"

Spec with_merges(std::vector<std::pair<std::string, std::string>> merges, bool pair_form = false) {
  Spec s;
  s.merges = std::move(merges);
  s.pair_form = pair_form;
  return s;
}

Spec english() {
  return with_merges({{G, "t"}, {"h", "e"}, {G + "t", "he"}, {"i", "n"}, {"in", "g"}, {"1", "2"}});
}

Tokenizer make(const Spec& s) { return Tokenizer::parse(tokenizer_json(s), "test tokenizer"); }

std::string error_of(const std::function<void()>& f) { return testing::user_error_of(f); }

TEST(Tokenizer, PretokenizesLikeLlama3) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pretokenize("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(pretokenize("I'm here's don't"), (V{"I", "'m", " here", "'s", " don", "'t"}));
  EXPECT_EQ(pretokenize("THEY'LL we'Re"), (V{"THEY", "'LL", " we", "'Re"}));
  EXPECT_EQ(pretokenize("12345 $100"), (V{"123", "45", " $", "100"}));
  EXPECT_EQ(pretokenize("a  b"), (V{"a", " ", " b"}));
  EXPECT_EQ(pretokenize("x\n\ny"), (V{"x", "\n\n", "y"}));
  EXPECT_EQ(pretokenize("  \n x"), (V{"  \n", " x"}));
  EXPECT_EQ(pretokenize("hi!!\n\nthere"), (V{"hi", "!!\n\n", "there"}));
  EXPECT_EQ(pretokenize("a ... (b)"), (V{"a", " ...", " (", "b", ")"}));
  EXPECT_EQ(pretokenize("(b) x"), (V{"(b", ")", " x"}));
  EXPECT_EQ(pretokenize("end   "), (V{"end", "   "}));
  EXPECT_EQ(pretokenize(" 42"), (V{" ", "42"}));
  EXPECT_EQ(pretokenize("\t\tfoo"), (V{"\t", "\tfoo"}));
  EXPECT_EQ(pretokenize("'x"), (V{"'x"}));
  // Unicode's categories (as Hugging Face's tokenizers splits them): letters, digits of other
  // scripts, punctuation, combining marks, spaces.
  EXPECT_EQ(pretokenize("caf\xC3\xA9 na\xC3\xAFve"), (V{"caf\xC3\xA9", " na\xC3\xAFve"}));
  EXPECT_EQ(pretokenize("\uFF01'll"), (V{"\uFF01'", "ll"}));
  EXPECT_EQ(pretokenize("x\u092A2024"), (V{"x\u092A", "202", "4"}));  // a letter
  EXPECT_EQ(pretokenize("x\u096A2024"), (V{"x", "\u096A20", "24"}));     // the digit 4
  EXPECT_EQ(pretokenize("a\u2026\nb"), (V{"a", "\u2026\n", "b"}));
  EXPECT_EQ(pretokenize("x\u00B2"), (V{"x", "\u00B2"}));
  EXPECT_EQ(pretokenize("a\u3000b"), (V{"a", "\u3000b"}));
  EXPECT_EQ(pretokenize("a\u00A0\u00A0b"), (V{"a", "\u00A0", "\u00A0b"}));
  EXPECT_EQ(pretokenize("a\u180E's"), (V{"a", "\u180E'", "s"}));  // not a space (Unicode 6.3)
  EXPECT_EQ(pretokenize("e\u0301t\u00E9"), (V{"e", "\u0301t\u00E9"}));
  EXPECT_TRUE(pretokenize("").empty());
}

TEST(Tokenizer, MergesApplyInRankOrder) {
  Tokenizer tk = make(english());
  const int64_t Gt = 256, he = 257, Gthe = 258, in = 259, ing = 260, n12 = 261;
  EXPECT_EQ(tk.vocab_size(), 402);
  EXPECT_EQ(tk.encode("the", false), (std::vector<int64_t>{'t', he}));  // no "t he" merge
  EXPECT_EQ(tk.encode(" the", false), (std::vector<int64_t>{Gthe}));
  EXPECT_EQ(tk.encode(" thing", false), (std::vector<int64_t>{Gt, 'h', ing}));
  EXPECT_EQ(tk.encode("1234", false), (std::vector<int64_t>{n12, '3', '4'}));
  EXPECT_EQ(tk.encode("12 12", false), (std::vector<int64_t>{n12, ' ', n12}));
  (void)in;
  // The same pairs in the other order give another segmentation.
  Spec first_er = with_merges({{"h", "e"}, {"e", "r"}});
  Spec first_he = with_merges({{"e", "r"}, {"h", "e"}}, true);  // and in the ["a", "b"] form
  EXPECT_EQ(make(first_er).encode("her", false), (std::vector<int64_t>{256, 'r'}));
  EXPECT_EQ(make(first_he).encode("her", false), (std::vector<int64_t>{'h', 256}));
  // Overlapping occurrences merge left to right.
  Spec aa = with_merges({{"a", "a"}});
  EXPECT_EQ(make(aa).encode("aaa", false), (std::vector<int64_t>{256, 'a'}));
}

TEST(Tokenizer, IgnoreMergesTakesWholeWords) {
  Spec s = english();
  s.extra_vocab = {G + "xyz"};
  const int64_t xyz = 262;
  EXPECT_EQ(make(s).encode(" xyz", false), (std::vector<int64_t>{' ', 'x', 'y', 'z'}));
  s.ignore_merges = true;
  EXPECT_EQ(make(s).encode(" xyz", false), (std::vector<int64_t>{xyz}));
  EXPECT_EQ(make(s).encode(" the", false), (std::vector<int64_t>{258}));
}

TEST(Tokenizer, AddedTokensAndBos) {
  Tokenizer tk = make(english());
  EXPECT_EQ(tk.bos(), kBos);
  EXPECT_EQ(tk.id_of("<|eot_id|>"), kEot);
  EXPECT_EQ(tk.encode("the", true), (std::vector<int64_t>{kBos, 't', 257}));
  std::vector<int64_t> ids = tk.encode("a<|eot_id|> the<|begin_of_text|>", false);
  EXPECT_EQ(ids, (std::vector<int64_t>{'a', kEot, 258, kBos}));
  EXPECT_EQ(tk.decode(ids), "a<|eot_id|> the<|begin_of_text|>");
  EXPECT_EQ(tk.decode(ids, true), "a the");
  EXPECT_EQ(tk.encode("<|eot", false), (std::vector<int64_t>{'<', '|', 'e', 'o', 't'}));
}

TEST(Tokenizer, BytesRoundTrip) {
  Tokenizer tk = make(english());
  const std::string text =
      "Hello, world! 1234567 don't\n\n\tTabs  and   spaces\r\n caf\xC3\xA9 \xE2\x98\x95 \x01\xFF"
      " the thing... (x) end  ";
  std::vector<int64_t> ids = tk.encode(text, true);
  EXPECT_EQ(ids[0], kBos);
  EXPECT_EQ(tk.decode(ids, true), text);
  EXPECT_EQ(tk.decode(ids), "<|begin_of_text|>" + text);
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(tk.decode(tk.encode(all + all, false)), all + all);
}

TEST(Tokenizer, LoadsFromAFile) {
  fs::path dir = fs::temp_directory_path() / cat("tempo_tokenizer_", ::getpid());
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "tokenizer.json");
    f << tokenizer_json(english());
  }
  Tokenizer tk = Tokenizer::load((dir / "tokenizer.json").string());
  EXPECT_EQ(tk.encode(" the", false), (std::vector<int64_t>{258}));
  {
    std::ofstream f(dir / "bad.json");
    f << "{\"model\": {\"type\": \"BPE\",}";
  }
  std::string e = error_of([&] { Tokenizer::load((dir / "bad.json").string()); });
  EXPECT_NE(e.find("malformed tokenizer " + (dir / "bad.json").string()), std::string::npos) << e;
  EXPECT_NE(e.find("expected a key at byte 25"), std::string::npos) << e;
  e = error_of([&] { Tokenizer::load((dir / "none.json").string()); });
  EXPECT_NE(e.find((dir / "none.json").string() + ": no such file"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(Tokenizer, ClearErrors) {
  Spec s = english();
  s.type = "Unigram";
  EXPECT_NE(error_of([&] { make(s); }).find("model type 'Unigram' is not supported"),
            std::string::npos);
  Tokenizer tk = make(english());
  EXPECT_NE(error_of([&] { tk.decode({5, 402}); }).find("token id 402 is not in the vocabulary"),
            std::string::npos);
  EXPECT_NE(error_of([&] { tk.decode({-1}); }).find("token id -1"), std::string::npos);
  EXPECT_NE(error_of([&] { tk.decode({300}); }).find("token id 300"), std::string::npos);  // a gap
  std::string bad_merge = tokenizer_json(english());
  bad_merge.replace(bad_merge.find("\"i n\""), 5, "\"i q9\"");
  EXPECT_NE(error_of([&] { Tokenizer::parse(bad_merge, "t"); }).find("is not in the vocabulary"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Tokenizer::parse("[]", "t"); }).find("t: no \"model\" object"),
            std::string::npos);
  // Without a post-processor nothing is added, though bos() names the added <|begin_of_text|>.
  Spec plain = english();
  plain.post_processor = "null";
  EXPECT_EQ(make(plain).encode(" the", false), (std::vector<int64_t>{258}));
  EXPECT_EQ(make(plain).bos(), kBos);
  // Without the template and without a known name there is no beginning-of-text token.
  std::string no_bos = tokenizer_json(english());
  const std::string name = "<|begin_of_text|>";
  for (size_t k = no_bos.find(name); k != std::string::npos; k = no_bos.find(name))
    no_bos.replace(k, name.size(), "<|x|>");
  Tokenizer nb = Tokenizer::parse(no_bos, "t");
  EXPECT_EQ(nb.bos(), kBos);  // the template still names it
  std::string no_template = no_bos;
  no_template.replace(no_template.find("\"TemplateProcessing\""), 20, "\"ByteLevel\"");
  Tokenizer nt = Tokenizer::parse(no_template, "t");
  EXPECT_EQ(nt.bos(), -1);
  EXPECT_EQ(nt.encode(" the", false), (std::vector<int64_t>{258}));
}

using Ids = std::vector<int64_t>;

TEST(Tokenizer, PreTokenizerForms) {
  const int64_t he = 257, Gthe = 258, ing = 260;
  auto split = [](const std::string& pattern, const std::string& behavior, bool invert) {
    Spec s = english();
    s.pre_tokenizer = cat(R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":)",
                          pattern, R"(,"behavior":")", behavior, R"(","invert":)",
                          invert ? "true" : "false",
                          R"(},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]})");
    return make(s);
  };
  EXPECT_EQ(split(R"({"String":" "})", "Removed", false).encode("a the", false),
            (Ids{'a', 't', he}));
  EXPECT_EQ(split(R"({"String":" "})", "Isolated", false).encode("a the", false),
            (Ids{'a', ' ', 't', he}));
  EXPECT_EQ(split(R"({"String":" "})", "MergedWithPrevious", false).encode("a the", false),
            (Ids{'a', ' ', 't', he}));
  EXPECT_EQ(split(R"({"String":" "})", "MergedWithNext", false).encode("a the", false),
            (Ids{'a', Gthe}));
  // Inverted, the text between the words is the match: " " merges with the next one.
  EXPECT_EQ(split(R"({"Regex":"\\S+"})", "MergedWithNext", true).encode("a the", false),
            (Ids{'a', Gthe}));
  EXPECT_EQ(split(R"({"Regex":"[a-z]"})", "Contiguous", false).encode("the thing", false),
            (Ids{'t', he, ' ', 't', 'h', ing}));
  // GPT-2's ByteLevel: its own regex, and the prefix space when asked.
  Spec gpt2 = english();
  gpt2.pre_tokenizer = R"({"type":"ByteLevel","add_prefix_space":true,"use_regex":true})";
  EXPECT_EQ(make(gpt2).encode("the x", false), (Ids{Gthe, ' ', 'x'}));
  EXPECT_EQ(make(gpt2).encode(" the", false), (Ids{Gthe}));
  // No pre-tokenizer: the text is one piece, merged across words.
  Spec none = english();
  none.pre_tokenizer = "null";
  EXPECT_EQ(make(none).encode("the thing", false), (Ids{'t', he, 256, 'h', ing}));
}

TEST(Tokenizer, PostProcessorTemplates) {
  Spec s = english();
  s.post_processor =
      R"({"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"B","type_id":0}},)"
      R"({"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"E","type_id":0}}],)"
      R"("special_tokens":{"B":{"id":"B","ids":[400,401],"tokens":["x","y"]},)"
      R"("E":{"id":"E","ids":[401],"tokens":["y"]}}})";
  EXPECT_EQ(make(s).encode(" the"), (Ids{kBos, kEot, 258, kEot}));
  EXPECT_EQ(make(s).encode(" the", false), (Ids{258}));
  EXPECT_EQ(make(s).bos(), kBos);
  s.post_processor = R"({"type":"RobertaProcessing","sep":["<|eot_id|>",401],)"
                     R"("cls":["<|begin_of_text|>",400]})";
  EXPECT_EQ(make(s).encode(""), (Ids{kBos, kEot}));
}

TEST(Tokenizer, SpecialAndPlainAddedTokens) {
  // An added token that is not special decodes as its text even when specials are skipped.
  std::string json = tokenizer_json(english());
  json.replace(json.find(R"("special":true})"), 15, R"("special":false})");  // <|begin_of_text|>
  Tokenizer tk = Tokenizer::parse(json, "t");
  EXPECT_EQ(tk.decode({kBos, 't', kEot}, true), "<|begin_of_text|>t");
  EXPECT_EQ(tk.decode({kBos, 't', kEot}), "<|begin_of_text|>t<|eot_id|>");
}

TEST(Tokenizer, BoundsAndUnsupportedForms) {
  auto err = [](const std::string& json) { return error_of([&] { Tokenizer::parse(json, "t"); }); };
  const std::string good = tokenizer_json(english());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string j = good;
    j.replace(j.find(from), from.size(), to);
    return j;
  };
  EXPECT_NE(err(with(R"("id":401)", R"("id":16777215)")).find("id 16777215, past the limit"),
            std::string::npos);
  EXPECT_NE(err(with(R"("id":401)", R"("id":100000)")).find("the largest token id is 100000"),
            std::string::npos);
  EXPECT_NE(err(with(R"("normalizer":null)", R"("normalizer":{"type":"NFC"})"))
                .find("normalizers are not supported"),
            std::string::npos);
  EXPECT_NE(err(with(R"("type":"Split")", R"("type":"Digits")")).find("type 'Digits' is not"),
            std::string::npos);
  EXPECT_NE(err(with(R"("Isolated")", R"("Sideways")")).find("behavior 'Sideways'"),
            std::string::npos);
  const std::string e = err(with(R"({"Regex":")", R"({"Regex":"()"));
  EXPECT_NE(e.find("does not compile: missing closing parenthesis"), std::string::npos) << e;
  EXPECT_NE(err(with(R"("ids":[400])", R"("ids":[999])")).find("not in the vocabulary"),
            std::string::npos);
  EXPECT_NE(err(with(R"("type":"TemplateProcessing")", R"("type":"Mystery")"))
                .find("type 'Mystery' is not supported"),
            std::string::npos);
}

}  // namespace
}  // namespace tempo::llm
