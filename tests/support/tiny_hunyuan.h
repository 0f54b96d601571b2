// A HunyuanOCR model folder for tests: the tiny random-weight fixture model (shared/fixtures/hunyuan)
// plus a tokenizer.json made here, since the fixture has none. Used by the CLI and engine tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/lector_test.h"

namespace lector::test {

// A HunyuanOCR folder from the tiny random-weight fixture model plus a tokenizer.json made here (the
// fixture has none): the spotting prompt is 13 added tokens carrying exactly the ids of the real
// tokenizer (hunyuanocr-spec.md §7, the golden input_ids), and every other id decodes to "t<id>", so
// the generated ids can be read back from the output text.
inline std::filesystem::path tinyHunyuanFolder()
{
    const std::filesystem::path src = lector::test::fixture("fixtures/hunyuan/tiny_model");
    const std::filesystem::path dir = lector::test::tempDir() / "hunyuan-tiny";
    std::filesystem::create_directories(dir);
    for (const auto& e : std::filesystem::directory_iterator(src))
        std::filesystem::copy_file(e.path(), dir / e.path().filename());
    const std::vector<std::pair<std::string, int>> pieces = {
        {"检测", 5055}, {"并", 951},   {"识别", 9977}, {"图片", 12858}, {"中的", 1843},   {"文字", 9738}, {"，", 270},
        {"将", 934},    {"文本", 8433}, {"坐标", 4699}, {"格式化", 68216}, {"输出", 8287}, {"。", 292}};
    nlohmann::json vocab = nlohmann::json::object();
    std::set<int> reserved;
    for (const auto& [text, id] : pieces) reserved.insert(id);
    for (int id = 0; id < 120000; ++id)
        if (!reserved.count(id)) vocab["t" + std::to_string(id)] = id;
    nlohmann::json added = nlohmann::json::array();
    for (const auto& [text, id] : pieces)
        added.push_back({{"id", id}, {"content", text}, {"single_word", false}, {"lstrip", false},
                         {"rstrip", false}, {"normalized", false}, {"special", false}});
    for (int id = 120000; id < 120818; ++id)
        added.push_back({{"id", id}, {"content", "<|special_" + std::to_string(id) + "|>"}, {"single_word", false},
                         {"lstrip", false}, {"rstrip", false}, {"normalized", false}, {"special", true}});
    const nlohmann::json tok = {{"version", "1.0"},
                      {"added_tokens", added},
                      {"normalizer", nullptr},
                      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
                      {"decoder", {{"type", "ByteLevel"}}},
                      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
    std::ofstream(dir / "tokenizer.json", std::ios::binary) << tok.dump();
    return dir;
}

}  // namespace lector::test
