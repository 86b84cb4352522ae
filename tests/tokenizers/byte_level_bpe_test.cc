#include "hyperpipe/tokenizers/byte_level_bpe.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "hyperpipe/common/error.h"
#include "test_files.h"

namespace hyperpipe::tokenizers {
namespace {

using hyperpipe::testing::error_message;

// A byte-level vocabulary: every byte's character (ids 0–255 in byte order), then each
// merge's result, then <|endoftext|>.
BpeVocabulary vocabulary_with(const std::vector<std::pair<std::string, std::string>>& merges) {
  BpeVocabulary vocabulary;
  for (int b = 0; b < 256; ++b) vocabulary.ids[byte_character(static_cast<unsigned char>(b))] = b;
  for (const auto& [left, right] : merges) {
    vocabulary.ids.emplace(left + right, static_cast<int64_t>(vocabulary.ids.size()));
  }
  vocabulary.merges = merges;
  const auto eot = static_cast<int64_t>(vocabulary.ids.size());
  vocabulary.ids[kGpt2EndOfText] = eot;
  vocabulary.added_tokens.emplace_back(kGpt2EndOfText, eot);
  return vocabulary;
}

int64_t id_of(const BpeVocabulary& vocabulary, const std::string& token) {
  return vocabulary.ids.at(token);
}

TEST(ByteCharacters, FollowGpt2sMapping) {
  // Printable Latin-1 keeps its code point; the rest take U+0100 on, in byte order.
  EXPECT_EQ(byte_character('!'), "!");
  EXPECT_EQ(byte_character('~'), "~");
  EXPECT_EQ(byte_character(0xE9), "\u00e9");  // é
  EXPECT_EQ(byte_character(0x00), "\u0100");
  EXPECT_EQ(byte_character('\n'), "\u010a");  // Ċ: the tenth byte moved
  EXPECT_EQ(byte_character(' '), "\u0120");   // Ġ: the 33rd
  EXPECT_EQ(byte_character(0x7F), "\u0121");
  EXPECT_EQ(byte_character(0xAD), "\u0143");  // the soft hyphen, the last moved
  std::set<std::string> distinct;
  for (int b = 0; b < 256; ++b) distinct.insert(byte_character(static_cast<unsigned char>(b)));
  EXPECT_EQ(distinct.size(), 256U);
}

TEST(ByteLevelBpe, MergesLowestRankFirstAsGpt2Does) {
  const auto vocabulary = vocabulary_with({{"l", "l"},
                                           {"h", "e"},
                                           {"he", "ll"},
                                           {"hell", "o"},
                                           {"\u0120", "w"},
                                           {"o", "r"},
                                           {"\u0120w", "or"}});
  const ByteLevelBpe bpe(vocabulary, "test");
  // "hello": l+l (rank 0), h+e, he+ll, hell+o. " world": Ġ+w (rank 4), o+r, Ġw+or; "l",
  // "d" stay bytes.
  EXPECT_EQ(
      bpe.encode("hello world"),
      (std::vector<int64_t>{id_of(vocabulary, "hello"), id_of(vocabulary, "\u0120wor"), 'l', 'd'}));
  // Ranks decide, not position: in "ello" l+l is merged though e+l comes first in text.
  EXPECT_EQ(bpe.encode("ello"), (std::vector<int64_t>{'e', id_of(vocabulary, "ll"), 'o'}));
}

TEST(ByteLevelBpe, MergesNeverCrossThePreTokenizersPieces) {
  // Each merge below would join two of GPT-2's pieces: "years" | "!", " " | " ok",
  // "I" | "'m", "a" | "42".
  const auto vocabulary =
      vocabulary_with({{"s", "!"}, {"\u0120", "\u0120"}, {"I", "'"}, {"a", "4"}, {"4", "2"}});
  const ByteLevelBpe bpe(vocabulary, "test");
  const auto ids = bpe.encode("years!  ok I'm a42");
  const std::vector<int64_t> bytes_except_42 = {'y', 'e', 'a', 'r', 's',  '!', ' ', ' ',
                                                'o', 'k', ' ', 'I', '\'', 'm', ' ', 'a'};
  std::vector<int64_t> expected(bytes_except_42);
  expected.push_back(id_of(vocabulary, "42"));  // numbers are one piece
  // The bytes are ids 0–255 by construction, so a byte is its own id.
  EXPECT_EQ(ids, expected);
  // A trailing run of spaces is its own piece, and merged within it.
  EXPECT_EQ(bpe.encode("ok   "),
            (std::vector<int64_t>{'o', 'k', id_of(vocabulary, "\u0120\u0120"), ' '}));
}

TEST(ByteLevelBpe, AddedTokensAreMatchedWhole) {
  const auto vocabulary = vocabulary_with({{"h", "i"}});
  const ByteLevelBpe bpe(vocabulary, "test");
  const int64_t eot = id_of(vocabulary, kGpt2EndOfText);
  EXPECT_EQ(bpe.end_of_document(), eot);
  EXPECT_EQ(bpe.encode("hi<|endoftext|>hi"),
            (std::vector<int64_t>{id_of(vocabulary, "hi"), eot, id_of(vocabulary, "hi")}));
  EXPECT_EQ(bpe.decode({eot, 'a'}), "<|endoftext|>a");
  EXPECT_EQ(bpe.vocab_size(), eot + 1);
}

TEST(ByteLevelBpe, AnyUtf8TextRoundTrips) {
  const auto vocabulary = vocabulary_with({{"\u0120", "t"}, {"\u0120t", "h"}, {"e", "r"}});
  const ByteLevelBpe bpe(vocabulary, "test");
  std::mt19937 random(7);
  const std::vector<std::string> alphabet = {
      "a",     "b", " ",  "  ", "\n",   "\t",         "th", "er", "1",
      "9",     "!", "'s", "é",  "漢字", "\U0001F600", "ß",  "-",  "<|endoftext|>",
      "\u00a0"};
  for (int trial = 0; trial < 200; ++trial) {
    std::string text;
    const int length = static_cast<int>(random() % 40);
    for (int i = 0; i < length; ++i) text += alphabet[random() % alphabet.size()];
    EXPECT_EQ(bpe.decode(bpe.encode(text)), text) << text;
  }
}

TEST(ByteLevelBpe, ItsIdentityChangesWithAnyMergeOrId) {
  const auto base = ByteLevelBpe(vocabulary_with({{"a", "b"}, {"c", "d"}}), "x").identity();
  EXPECT_NE(base.find("byte-level BPE, 259 tokens, CRC-32 "), std::string::npos) << base;
  EXPECT_EQ(ByteLevelBpe(vocabulary_with({{"a", "b"}, {"c", "d"}}), "elsewhere").identity(), base);
  EXPECT_NE(ByteLevelBpe(vocabulary_with({{"c", "d"}, {"a", "b"}}), "x").identity(), base);
}

TEST(ByteLevelBpe, RefusesTextThatIsNotUtf8AndIdsOutsideItsVocabulary) {
  const ByteLevelBpe bpe(vocabulary_with({}), "vocab.json");
  EXPECT_NE(error_message<InputError>([&] { bpe.encode("ok \xff\xfe"); }).find("UTF-8"),
            std::string::npos);
  EXPECT_NE(error_message<InputError>([&] { bpe.decode({999}); }).find("found 999"),
            std::string::npos);
}

TEST(ByteLevelBpe, RefusesAVocabularyMissingAByteOrAMergesResult) {
  auto missing_byte = vocabulary_with({});
  missing_byte.ids.erase(byte_character('A'));
  EXPECT_NE(
      error_message<InputError>([&] { ByteLevelBpe(missing_byte, "v.json"); }).find("byte 65"),
      std::string::npos);
  auto missing_merge = vocabulary_with({{"a", "b"}});
  missing_merge.merges.emplace_back("b", "c");
  EXPECT_NE(
      error_message<InputError>([&] { ByteLevelBpe(missing_merge, "v.json"); }).find("\"bc\""),
      std::string::npos);
}

// Llama 3's pattern cuts digits in threes, where GPT-2's keeps a run of them whole.
constexpr char kLlama3Pattern[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|)"
    R"(\s*[\r\n]+|\s+(?!\S)|\s+)";

TEST(ByteLevelBpe, SplitsByTheFilesOwnPattern) {
  auto vocabulary = vocabulary_with({{"2", "0"}, {"20", "2"}, {"202", "4"}, {"'", "S"}});
  const ByteLevelBpe gpt2(vocabulary, "gpt2");
  EXPECT_EQ(gpt2.encode("2024"), std::vector<int64_t>{id_of(vocabulary, "2024")});
  EXPECT_EQ(gpt2.encode("IT'S"), (std::vector<int64_t>{'I', 'T', '\'', 'S'}));
  vocabulary.splitting.pattern = kLlama3Pattern;
  const ByteLevelBpe llama3(vocabulary, "llama3");
  EXPECT_EQ(llama3.encode("2024"), (std::vector<int64_t>{id_of(vocabulary, "202"), '4'}));
  // Its contractions ignore case: "'S" is one piece, where GPT-2 cuts "'" from "S".
  EXPECT_EQ(llama3.encode("IT'S"), (std::vector<int64_t>{'I', 'T', id_of(vocabulary, "'S")}));
  EXPECT_NE(llama3.identity(), gpt2.identity());
  vocabulary.splitting.pattern = "(unclosed";
  EXPECT_NE(
      error_message<InputError>([&] { ByteLevelBpe(vocabulary, "t.json"); }).find("pre_tokenizer"),
      std::string::npos);
}

TEST(ByteLevelBpe, NormalizesToNfcWhereAsked) {
  auto vocabulary = vocabulary_with({});
  const std::string decomposed = "e\u0301";  // e + combining acute
  const ByteLevelBpe plain(vocabulary, "plain");
  EXPECT_EQ(plain.encode(decomposed), (std::vector<int64_t>{'e', 0xCC, 0x81}));
  vocabulary.splitting.nfc = true;
  const ByteLevelBpe nfc(vocabulary, "nfc");
  EXPECT_EQ(nfc.encode(decomposed), (std::vector<int64_t>{0xC3, 0xA9}));  // é, U+00E9
  EXPECT_EQ(nfc.decode(nfc.encode(decomposed)), "\u00e9");
}

TEST(ByteLevelBpe, IgnoreMergesTakesAWholePieceThatIsAToken) {
  // "ab" + "c" is the only merge path to "abc"; without it, "abc" is still a token whole.
  auto vocabulary = vocabulary_with({{"a", "b"}});
  vocabulary.ids.emplace("abc", static_cast<int64_t>(vocabulary.ids.size()));
  const ByteLevelBpe merging(vocabulary, "merging");
  EXPECT_EQ(merging.encode("abc"), (std::vector<int64_t>{id_of(vocabulary, "ab"), 'c'}));
  vocabulary.ignore_merges = true;
  const ByteLevelBpe whole(vocabulary, "whole");
  EXPECT_EQ(whole.encode("abc"), std::vector<int64_t>{id_of(vocabulary, "abc")});
  EXPECT_EQ(whole.encode("abd"), (std::vector<int64_t>{id_of(vocabulary, "ab"), 'd'}));
}

TEST(ByteLevelBpe, KnowsLlama3sEndOfText) {
  BpeVocabulary vocabulary = vocabulary_with({});
  vocabulary.ids.erase(kGpt2EndOfText);
  vocabulary.added_tokens = {{kLlama3EndOfText, 300}};
  const ByteLevelBpe llama3(vocabulary, "llama3");
  EXPECT_EQ(llama3.end_of_document(), std::optional<int64_t>(300));
  vocabulary.added_tokens = {{"<|eot_id|>", 300}};
  EXPECT_EQ(ByteLevelBpe(vocabulary, "chat").end_of_document(), std::nullopt);
}

// The same vocabulary written both ways Hugging Face ships it.
class BpeFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = hyperpipe::testing::temp_path("bpe-files");
    std::filesystem::create_directories(dir_);
    vocabulary_ = vocabulary_with({{"l", "l"}, {"h", "e"}, {"he", "ll"}, {"\u0120", "w"}});
    nlohmann::json vocab(vocabulary_.ids);
    std::ofstream(dir_ + "/vocab.json") << vocab.dump();
    std::ofstream merges(dir_ + "/merges.txt");
    merges << "#version: 0.2\n";
    for (const auto& [left, right] : vocabulary_.merges) merges << left << ' ' << right << "\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write_tokenizer_json(const nlohmann::json& pre_tokenizer, bool merges_as_pairs) {
    nlohmann::json merges = nlohmann::json::array();
    for (const auto& [left, right] : vocabulary_.merges) {
      merges.push_back(merges_as_pairs ? nlohmann::json::array({left, right})
                                       : nlohmann::json(left + " " + right));
    }
    nlohmann::json json = {
        {"version", "1.0"},
        {"added_tokens",
         {{{"id", vocabulary_.ids.at(kGpt2EndOfText)}, {"content", kGpt2EndOfText}}}},
        {"normalizer", nullptr},
        {"pre_tokenizer", pre_tokenizer},
        {"model", {{"type", "BPE"}, {"vocab", vocabulary_.ids}, {"merges", merges}}}};
    std::ofstream(dir_ + "/tokenizer.json") << json.dump();
  }

  std::string dir_;
  BpeVocabulary vocabulary_;
};

const nlohmann::json kGpt2PreTokenizer = {
    {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};

TEST_F(BpeFiles, VocabAndMergesAndTokenizerJsonEncodeAlike) {
  const std::string text = "hello world<|endoftext|>hell";
  const auto from_pair = open_tokenizer(dir_ + "/vocab.json");
  const std::vector<int64_t> expected = {id_of(vocabulary_, "hell"),
                                         'o',
                                         id_of(vocabulary_, "\u0120w"),
                                         'o',
                                         'r',
                                         'l',
                                         'd',
                                         id_of(vocabulary_, kGpt2EndOfText),
                                         id_of(vocabulary_, "hell")};
  EXPECT_EQ(from_pair->encode(text), expected);
  for (bool as_pairs : {false, true}) {
    write_tokenizer_json(kGpt2PreTokenizer, as_pairs);
    const auto from_json = open_tokenizer(dir_);  // the directory: tokenizer.json first
    EXPECT_EQ(from_json->encode(text), expected);
    EXPECT_EQ(from_json->vocab_size(), from_pair->vocab_size());
    EXPECT_EQ(from_json->identity(), from_pair->identity());
    EXPECT_NE(from_json->describe().find("tokenizer.json"), std::string::npos);
  }
}

TEST_F(BpeFiles, ReadsASplitThenBytesPreTokenizer) {
  const nlohmann::json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  const auto split = [](const char* behavior) {
    return nlohmann::json{{"type", "Split"},
                          {"pattern", {{"Regex", kLlama3Pattern}}},
                          {"behavior", behavior},
                          {"invert", false}};
  };
  write_tokenizer_json({{"type", "Sequence"}, {"pretokenizers", {split("Isolated"), byte_level}}},
                       false);
  const auto llama3 = open_tokenizer(dir_ + "/tokenizer.json");
  EXPECT_EQ(llama3->encode("12345").size(), 5U);  // "123", "45": no merges of digits here
  EXPECT_NE(llama3->identity(), open_tokenizer(dir_ + "/vocab.json")->identity());
  // Other Split behaviours drop or join text: refused, naming the field.
  write_tokenizer_json({{"type", "Sequence"}, {"pretokenizers", {split("Removed"), byte_level}}},
                       false);
  EXPECT_NE(error_message<InputError>([&] {
              open_tokenizer(dir_ + "/tokenizer.json");
            }).find("pre_tokenizer"),
            std::string::npos);
}

TEST_F(BpeFiles, RefusesOtherPreTokenizersAndBrokenFiles) {
  write_tokenizer_json({{"type", "Metaspace"}}, false);
  EXPECT_NE(error_message<InputError>([&] {
              open_tokenizer(dir_ + "/tokenizer.json");
            }).find("pre_tokenizer"),
            std::string::npos);
  std::ofstream(dir_ + "/merges.txt") << "#version: 0.2\nl l x\n";
  const auto message = error_message<InputError>([&] { open_tokenizer(dir_ + "/vocab.json"); });
  EXPECT_NE(message.find("merges.txt"), std::string::npos) << message;
  EXPECT_NE(message.find("line 2"), std::string::npos) << message;
  std::ofstream(dir_ + "/vocab.json") << "{\"a\": ";
  EXPECT_NE(
      error_message<InputError>([&] { open_tokenizer(dir_ + "/vocab.json"); }).find("vocab.json"),
      std::string::npos);
}

}  // namespace
}  // namespace hyperpipe::tokenizers
