// parse_json_strict: large inputs stay linear (#26 finding 6), and the strict rules still hold on them.
#include "rdrr/json_strict.h"

#include <gtest/gtest.h>

#include <string>

namespace rdrr {
namespace {

constexpr size_t kLarge = 100000;  // a MoE checkpoint has ~18,000-90,000 tensors

void ExpectError(const Status& s, StatusCode code, std::string_view fragment) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << "message: " << s.message() << "\nwanted: " << fragment;
}

// {"tensors": {"t0": {}, "t1": {}, ...}} with `n` members, then `tail` inside the inner object.
std::string object_of_empty_objects(size_t n, const std::string& tail = "") {
  std::string s = "{\"tensors\": {";
  for (size_t i = 0; i < n; ++i) s += (i == 0 ? "\"t" : ", \"t") + std::to_string(i) + "\": {}";
  return s + tail + "}}";
}

// nlohmann's callback parser rescanned the parent object at every nested object_end: 100,000 members took
// minutes. The DOM builder keeps one map look-up per key.
TEST(JsonStrict, ObjectOf100000EmptyObjectsParses) {
  Result<nlohmann::json> j = parse_json_strict(object_of_empty_objects(kLarge), "big.json");
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  const nlohmann::json& t = j->at("tensors");
  ASSERT_EQ(t.size(), kLarge);
  EXPECT_TRUE(t.at("t99999").is_object());
  EXPECT_TRUE(t.at("t0").empty());
}

TEST(JsonStrict, ArrayOf100000EmptyObjectsParses) {
  std::string s = "[";
  for (size_t i = 0; i < kLarge; ++i) s += i == 0 ? "{}" : ",{}";
  Result<nlohmann::json> j = parse_json_strict(s + "]", "big.json");
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ(j->size(), kLarge);
}

TEST(JsonStrict, DuplicateKeyAfter100000MembersIsNamed) {
  ExpectError(parse_json_strict(object_of_empty_objects(kLarge, ", \"t5\": {}"), "big.json").status(),
              StatusCode::kParse, "big.json: duplicate JSON key 't5' in object /tensors");
}

TEST(JsonStrict, DuplicateKeyPathNamesArrayIndicesAndEscapedKeys) {
  ExpectError(parse_json_strict(R"({"a/b": [0, {}, [{"k": 1}, {"k": 1, "k": 2}]]})", "x").status(), StatusCode::kParse,
              "duplicate JSON key 'k' in object /a~1b/2/1");
}

TEST(JsonStrict, ValuesOfEveryTypeSurvive) {
  Result<nlohmann::json> j = parse_json_strict(R"({"n": null, "b": true, "i": -3, "u": 7, "f": 0.5, "s": "x",
                                                   "a": [[], {}], "o": {"k": [1]}})",
                                               "x");
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ(*j, nlohmann::json::parse(R"({"n": null, "b": true, "i": -3, "u": 7, "f": 0.5, "s": "x",
                                          "a": [[], {}], "o": {"k": [1]}})"));
  EXPECT_TRUE(j->at("i").is_number_integer());
  EXPECT_TRUE(j->at("u").is_number_unsigned());
}

TEST(JsonStrict, DepthLimitIsExact) {
  const auto nested = [](int levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  EXPECT_TRUE(parse_json_strict(nested(kMaxJsonDepth), "x").ok());
  ExpectError(parse_json_strict(nested(kMaxJsonDepth + 1), "x").status(), StatusCode::kParse,
              "x: nesting deeper than 64 levels");
}

TEST(JsonStrict, SyntaxErrorsOverflowAndTrailingDataAreErrors) {
  ExpectError(parse_json_strict("[1e999]", "x").status(), StatusCode::kNonFinite, "x: number is not finite");
  ExpectError(parse_json_strict("{\"a\": 1", "x").status(), StatusCode::kParse, "x: invalid JSON");
  ExpectError(parse_json_strict("{} {}", "x").status(), StatusCode::kParse, "x: invalid JSON");
  ExpectError(parse_json_strict("[1] // c", "x").status(), StatusCode::kParse, "x: invalid JSON");
}

}  // namespace
}  // namespace rdrr
