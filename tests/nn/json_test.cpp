// The JSON reader (nn/json.h): values, escapes (surrogate pairs included), and errors that name
// the document and the byte offset.
#include "nn/json.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace tempo::nn {
namespace {

std::string error_of(const std::string& text, const std::string& what = "test.json") {
  try {
    parse_json(text, what);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Json, ParsesEveryKindOfValue) {
  Json v = parse_json(R"( {"a": [1, -2.5, 3e2, true, false, null], "b": {"c": "x"}, "a": 0} )",
                      "doc");
  ASSERT_EQ(v.kind, Json::Object);
  ASSERT_EQ(v.members.size(), 3u);
  const Json* a = v.get("a");  // the first of a repeated key
  ASSERT_TRUE(a && a->kind == Json::Array);
  ASSERT_EQ(a->items.size(), 6u);
  EXPECT_TRUE(a->items[0].is_int);
  EXPECT_EQ(a->items[0].integer, 1);
  EXPECT_FALSE(a->items[1].is_int);
  EXPECT_EQ(a->items[1].number, -2.5);
  EXPECT_FALSE(a->items[2].is_int);
  EXPECT_EQ(a->items[2].number, 300.0);
  EXPECT_EQ(a->items[3].kind, Json::Bool);
  EXPECT_TRUE(a->items[3].boolean);
  EXPECT_FALSE(a->items[4].boolean);
  EXPECT_EQ(a->items[5].kind, Json::Null);
  ASSERT_NE(v.get("b"), nullptr);
  EXPECT_EQ(v.get("b")->get("c")->str, "x");
  EXPECT_EQ(v.get("zz"), nullptr);
  EXPECT_EQ(parse_json("[]", "d").items.size(), 0u);
  EXPECT_EQ(parse_json("{}", "d").members.size(), 0u);
  EXPECT_EQ(parse_json("-9007199254740993", "d").integer, -9007199254740993LL);
  // Too large for int64: still a number.
  Json big = parse_json("123456789012345678901234", "d");
  EXPECT_FALSE(big.is_int);
  EXPECT_NEAR(big.number, 1.2345678901234568e23, 1e8);
}

TEST(Json, EscapesBecomeUtf8) {
  EXPECT_EQ(parse_json(R"("a\"b\\c\/d\n\t\r\b\f")", "d").str, "a\"b\\c/d\n\t\r\b\f");
  EXPECT_EQ(parse_json(R"("\u0041\u00e9\u20AC")", "d").str, "A\xC3\xA9\xE2\x82\xAC");
  // U+1F600 as a surrogate pair, and raw UTF-8 kept as it is.
  EXPECT_EQ(parse_json(R"("\ud83d\ude00")", "d").str, "\xF0\x9F\x98\x80");
  EXPECT_EQ(parse_json("\"\xC4\xA0x\"", "d").str, "\xC4\xA0x");
}

TEST(Json, QuoteReadsBack) {
  const std::string s = "tab\t \"quoted\" back\\slash \x01 \xC3\xA9";
  EXPECT_EQ(parse_json(json_quote(s), "d").str, s);
  EXPECT_EQ(json_quote("a\"b"), "\"a\\\"b\"");
}

TEST(Json, MalformedInputNamesTheDocumentAndOffset) {
  std::string e = error_of(R"({"a": 1,})", "config 'x.json'");
  EXPECT_NE(e.find("malformed config 'x.json'"), std::string::npos) << e;
  EXPECT_NE(e.find("expected a key at byte 8"), std::string::npos) << e;
  EXPECT_NE(error_of("[1 2]").find("expected ',' or ']' at byte 3"), std::string::npos);
  EXPECT_NE(error_of("{} x").find("trailing characters"), std::string::npos);
  EXPECT_NE(error_of("\"abc").find("unterminated string"), std::string::npos);
  EXPECT_NE(error_of(R"("\uZZZZ")").find("bad \\u escape"), std::string::npos);
  EXPECT_NE(error_of(R"("\ud83d")").find("unpaired surrogate"), std::string::npos);
  EXPECT_NE(error_of(R"("\ude00x")").find("unpaired surrogate"), std::string::npos);
  EXPECT_NE(error_of(R"("\q")").find("bad escape at byte 2"), std::string::npos);
  EXPECT_NE(error_of("-").find("expected a digit"), std::string::npos);
  EXPECT_NE(error_of("1.").find("expected a digit"), std::string::npos);
  EXPECT_NE(error_of("tru").find("unexpected character 't' at byte 0"), std::string::npos);
  EXPECT_NE(error_of("").find("unexpected end"), std::string::npos);
  EXPECT_NE(error_of(std::string(100, '[')).find("nesting too deep"), std::string::npos);
}

}  // namespace
}  // namespace tempo::nn
