// lector-cli end to end, as a user runs it: the real executable on the real PP-OCR models, with good
// and bad inputs mixed, batch output, --resume after a kill, Ctrl-C, CSV, and the exit codes of
// docs (0 fine, 1 some images failed, 2 usage, 3 model not loadable, 130 interrupted).
// Expected texts are the known contents of the bundled samples (the fixture images of shared/fixtures).
#include "tests/support/lector_test.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/tiny_hunyuan.h"

#ifndef LECTOR_CLI_PATH
#error "LECTOR_CLI_PATH must name the lector-cli executable"
#endif

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Run {
    int rc = -1;
    std::string out, err;
};

std::string readAll(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void writeAll(const fs::path& p, const std::string& bytes)
{
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << bytes;
}

std::string quote(const std::string& s)
{
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// Runs `lector-cli ARGS` through the shell (ARGS already quoted), from `cwd`.
Run cli(const std::string& args, const fs::path& cwd = fs::temp_directory_path())
{
    static int counter = 0;
    const fs::path dir = lector::test::tempDir();
    const fs::path out = dir / ("out" + std::to_string(counter)), err = dir / ("err" + std::to_string(counter++));
    const std::string cmd = "cd " + quote(cwd.string()) + " && OMP_NUM_THREADS=2 " + quote(LECTOR_CLI_PATH) + " " +
                            args + " >" + quote(out.string()) + " 2>" + quote(err.string());
    const int status = std::system(cmd.c_str());
    Run r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = readAll(out);
    r.err = readAll(err);
    return r;
}

fs::path sample(const std::string& name)
{
    return lector::test::fixture("fixtures/ppocr/" + name + ".png");
}

std::vector<json> jsonLines(const std::string& text)
{
    std::vector<json> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(json::parse(line));
    return out;
}

void requireModels()
{
    if (!fs::exists(lector::test::ppocrModelDir() / "ppocr_keys_v1.txt") &&
        !fs::exists(lector::test::ppocrModelDir()))
        LECTOR_SKIP("PP-OCR models not fetched (./lector.sh fetch-models)");
}

// CRC-32 (IEEE) for hand-made PNG chunks.
uint32_t crc32(const std::string& bytes)
{
    uint32_t c = 0xffffffffu;
    for (unsigned char b : bytes) {
        c ^= b;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return ~c;
}

std::string be32(uint32_t v)
{
    return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

// A valid PNG header that claims width x height pixels, with one tiny IDAT: the decoder must refuse it
// from the header, before it allocates anything.
std::string pngClaiming(uint32_t width, uint32_t height)
{
    auto chunk = [](const std::string& type, const std::string& data) {
        return be32(uint32_t(data.size())) + type + data + be32(crc32(type + data));
    };
    const std::string ihdr = be32(width) + be32(height) + std::string("\x08\x02\x00\x00\x00", 5);
    const std::string idat("\x78\x9c\x63\x00\x00\x00\x01\x00\x01", 9);
    return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", idat) + chunk("IEND", "");
}

const std::vector<std::string> kDocEnLines = {"Quarterly Report 2026", "Revenue grew 14.2% to $3.4 million.",
                                              "Contact: ops@example.org, +1 555 0100"};

std::vector<std::string> lineTexts(const json& r)
{
    std::vector<std::string> t;
    for (const auto& l : r.at("lines")) t.push_back(l.at("text"));
    return t;
}

}  // namespace

LECTOR_TEST(recognizePrintsTheSchemaObject)
{
    requireModels();
    const Run r = cli("recognize " + quote(sample("doc_en").string()));
    LECTOR_CHECK_MSG(r.rc == 0, r.err);
    const json j = json::parse(r.out);
    LECTOR_CHECK(j.is_object());
    LECTOR_CHECK(lineTexts(j) == kDocEnLines);
    LECTOR_CHECK_EQ(j.at("width").get<int>(), 800);
    LECTOR_CHECK_EQ(j.at("model").get<std::string>(), std::string("ppocr-v4"));
    LECTOR_CHECK(j.at("error").is_null());
    LECTOR_CHECK(j.at("timing_ms").at("total").get<double>() > 0);
    LECTOR_CHECK(j.at("lines")[0].at("box").size() == 4 && j.at("lines")[0].at("polygon").size() == 4);
}

LECTOR_TEST(badInputsBecomeErrorObjectsInOrderAndExitOne)
{
    requireModels();
    const fs::path dir = lector::test::tempDir();
    writeAll(dir / "empty.png", "");
    const std::string jpeg = readAll(lector::test::fixture("eval-dev/sroie2019-dev/images/003.jpg"));
    writeAll(dir / "truncated.jpg", jpeg.substr(0, jpeg.size() / 3));
    writeAll(dir / "text.png", "this is not an image\n");
    writeAll(dir / "huge.png", pngClaiming(30000, 30000));
    fs::create_directories(dir / "a folder.png");
    const std::vector<std::string> inputs = {(dir / "empty.png").string(),        sample("doc_en").string(),
                                             (dir / "truncated.jpg").string(),    (dir / "text.png").string(),
                                             (dir / "huge.png").string(),         (dir / "missing.png").string(),
                                             (dir / "a folder.png").string()};
    std::string args = "recognize --format jsonl";
    for (const auto& in : inputs) args += " " + quote(in);
    const Run r = cli(args);
    LECTOR_CHECK_MSG(r.rc == 1, "rc " << r.rc << "\n" << r.err);
    const auto results = jsonLines(r.out);
    LECTOR_CHECK_EQ(results.size(), inputs.size());
    const std::vector<std::string> codes = {"empty_file", "", "decode_failed", "", "image_too_large", "file_not_found", ""};
    for (size_t i = 0; i < results.size() && i < inputs.size(); ++i) {
        const json& res = results[i];
        LECTOR_CHECK_EQ(res.at("image").get<std::string>(), inputs[i]);
        if (i == 1) {
            LECTOR_CHECK(res.at("error").is_null());
            LECTOR_CHECK(lineTexts(res) == kDocEnLines);
            continue;
        }
        LECTOR_CHECK_MSG(res.at("error").is_object(), inputs[i]);
        if (!res.at("error").is_object()) continue;
        const std::string message = res["error"].at("message");
        // Each message names its input, so a user can find the file.
        LECTOR_CHECK_MSG(message.find(fs::path(inputs[i]).filename().string()) != std::string::npos, message);
        if (!codes[i].empty()) LECTOR_CHECK_EQ(res["error"].at("code").get<std::string>(), codes[i]);
        LECTOR_CHECK(!res.contains("lines"));
    }
    // And stderr says which files failed.
    LECTOR_CHECK(r.err.find("truncated.jpg") != std::string::npos);
}

LECTOR_TEST(outputToAFullDiskIsAnErrorNotSuccess)
{
    requireModels();
    if (!fs::exists("/dev/full")) LECTOR_SKIP("no /dev/full");
    const std::string cmd = "OMP_NUM_THREADS=2 " + quote(LECTOR_CLI_PATH) + " recognize " + quote(sample("doc_en").string()) +
                            " > /dev/full 2> " + quote((lector::test::tempDir() / "err").string());
    const int status = std::system(cmd.c_str());
    LECTOR_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

LECTOR_TEST(usageErrorsExitTwo)
{
    LECTOR_CHECK_EQ(cli("--bogus").rc, 2);
    LECTOR_CHECK_EQ(cli("recognize").rc, 2);
    LECTOR_CHECK_EQ(cli("recognize --format xml x.png").rc, 2);
    LECTOR_CHECK_EQ(cli("recognize --threads -3 x.png").rc, 2);
    LECTOR_CHECK_EQ(cli("batch /tmp").rc, 2);  // no --out
    LECTOR_CHECK_EQ(cli("batch /tmp --out r.xml").rc, 2);
    const Run help = cli("recognize --help");
    LECTOR_CHECK_EQ(help.rc, 0);
    LECTOR_CHECK(help.out.find("--format") != std::string::npos);
}

LECTOR_TEST(wrongModelFolderExitsThreeNamingIt)
{
    const fs::path dir = lector::test::tempDir() / "not-a-model";
    fs::create_directories(dir);
    writeAll(dir / "det.onnx", "garbage");
    const Run r = cli("recognize --model-dir " + quote(dir.string()) + " " + quote(sample("doc_en").string()));
    LECTOR_CHECK_EQ(r.rc, 3);
    LECTOR_CHECK_MSG(r.err.find("not-a-model") != std::string::npos, r.err);
    const Run h = cli("recognize --model hunyuan-ocr --model-dir " + quote(dir.string()) + " " +
                      quote(sample("doc_en").string()));
    LECTOR_CHECK_EQ(h.rc, 3);
    LECTOR_CHECK_MSG(h.err.find("config.json") != std::string::npos, h.err);
}

LECTOR_TEST(csvHasBomHeaderAndOneRowPerLine)
{
    requireModels();
    const Run r = cli("recognize --format csv " + quote(sample("doc_en").string()));
    LECTOR_CHECK_EQ(r.rc, 0);
    LECTOR_CHECK(r.out.rfind("\xEF\xBB\xBFimage,line,text,confidence,x0,y0,x1,y1\r\n", 0) == 0);
    size_t rows = 0;
    for (size_t at = 0; (at = r.out.find("\r\n", at)) != std::string::npos; at += 2) ++rows;
    LECTOR_CHECK_EQ(rows, kDocEnLines.size() + 1);
    LECTOR_CHECK(r.out.find("\"Contact: ops@example.org, +1 555 0100\"") != std::string::npos);
}

LECTOR_TEST(batchWritesEveryImageOnceAndResumesAfterAKill)
{
    requireModels();
    const fs::path src = lector::test::tempDir() / "scans";
    fs::create_directories(src / "sub");
    fs::copy_file(sample("doc_en"), src / "a.png");
    fs::copy_file(sample("receipt_zh"), src / "sub" / "b.png");
    fs::copy_file(sample("rotated_en"), src / "c.png");
    writeAll(src / "d.jpg", "not a jpeg");
    writeAll(src / "notes.txt", "ignored: not an image type");
    const fs::path outFile = src.parent_path() / "results.jsonl";

    Run r = cli("batch " + quote(src.string()) + " --recursive --out " + quote(outFile.string()));
    LECTOR_CHECK_MSG(r.rc == 1, "rc " << r.rc << " " << r.err);  // d.jpg failed
    auto results = jsonLines(readAll(outFile));
    std::map<std::string, json> byName;
    for (const auto& j : results) byName[j.at("image")] = j;
    LECTOR_CHECK_EQ(results.size(), size_t(4));
    LECTOR_CHECK_EQ(byName.size(), size_t(4));
    LECTOR_CHECK(byName.count("sub/b.png") == 1);  // names relative to the batch root
    LECTOR_CHECK(lineTexts(byName["a.png"]) == kDocEnLines);
    LECTOR_CHECK(byName["d.jpg"].at("error").is_object());

    // Without --resume or --overwrite an existing output is never clobbered.
    const std::string before = readAll(outFile);
    r = cli("batch " + quote(src.string()) + " --recursive --out " + quote(outFile.string()));
    LECTOR_CHECK_EQ(r.rc, 2);
    LECTOR_CHECK(readAll(outFile) == before);

    // A run killed mid-write: drop the last two results and leave half a line behind.
    std::string cut = before;
    for (int k = 0; k < 3; ++k) cut.erase(cut.rfind('\n', cut.size() - 2) + 1);
    const std::string kept = cut;
    cut += before.substr(kept.size(), 20);
    writeAll(outFile, cut);
    r = cli("batch " + quote(src.string()) + " --recursive --resume --out " + quote(outFile.string()));
    LECTOR_CHECK_MSG(r.rc == 0 || r.rc == 1, r.err);
    const std::string resumed = readAll(outFile);
    LECTOR_CHECK(resumed.rfind(kept, 0) == 0);  // what was done is kept as it was
    results = jsonLines(resumed);               // and the file parses: the torn line is gone
    byName.clear();
    for (const auto& j : results) byName[j.at("image")] = j;
    LECTOR_CHECK_EQ(results.size(), size_t(4));
    LECTOR_CHECK_EQ(byName.size(), size_t(4));
}

LECTOR_TEST(ctrlCLeavesAValidFileThatResumes)
{
    requireModels();
    const fs::path src = lector::test::tempDir() / "many";
    fs::create_directories(src);
    const int n = 16;
    for (int i = 0; i < n; ++i) {
        const std::string name = "p" + std::to_string(100 + i) + ".png";
        fs::copy_file(sample(i % 2 ? "receipt_zh" : "doc_en"), src / name);
    }
    const fs::path outFile = src.parent_path() / "r.jsonl";
    // SIGINT a couple of seconds in; on a fast machine the batch may finish first (then rc is 0).
    const std::string cmd = "cd / && (OMP_NUM_THREADS=2 " + quote(LECTOR_CLI_PATH) + " batch " + quote(src.string()) +
                            " --out " + quote(outFile.string()) + " 2>/dev/null & pid=$!; sleep 2; kill -INT $pid; wait $pid)";
    const int status = std::system(cmd.c_str());
    const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    LECTOR_CHECK_MSG(rc == 130 || rc == 0, "rc " << rc);
    auto results = jsonLines(readAll(outFile));  // parses: every line complete
    LECTOR_CHECK(results.size() <= size_t(n));
    // Interrupted: the images still queued were cancelled, not written (nor written as errors).
    if (rc == 130) LECTOR_CHECK(results.size() < size_t(n));
    for (const auto& j : results) LECTOR_CHECK(j.at("error").is_null());
    const Run r = cli("batch " + quote(src.string()) + " --resume --out " + quote(outFile.string()));
    LECTOR_CHECK_MSG(r.rc == 0, r.err);
    results = jsonLines(readAll(outFile));
    std::set<std::string> names;
    for (const auto& j : results) names.insert(j.at("image").get<std::string>());
    LECTOR_CHECK_EQ(results.size(), size_t(n));
    LECTOR_CHECK_EQ(names.size(), size_t(n));
}

LECTOR_TEST(benchPrintsAStageTable)
{
    requireModels();
    const Run r = cli("bench --warmup 0 --repeat 1 --no-throughput " + quote(sample("doc_en").string()));
    LECTOR_CHECK_MSG(r.rc == 0, r.err);
    for (const char* stage : {"det", "rec", "total", "median ms"})
        LECTOR_CHECK_MSG(r.out.find(stage) != std::string::npos, r.out);
}

LECTOR_TEST(hunyuanSpottingRunsTheTinyModelEndToEnd)
{
    const fs::path dir = lector::test::tinyHunyuanFolder();
    const json golden = json::parse(readAll(lector::test::fixture("fixtures/hunyuan/golden_summary.json")));
    // Both decoders: the libtorch reference (the CPU default) and the GPU engine's fused runner, which
    // runs here through gpu/'s CPU references; both must give the golden decode.
    for (const char* runner : {"reference", "fused"}) {
        const Run r = cli("recognize --model hunyuan-ocr --model-dir " + quote(dir.string()) + " --runner " + runner +
                          " --preset spotting --repetition-penalty 1 --max-new-tokens 8 --format jsonl " +
                          quote(lector::test::fixture("fixtures/hunyuan/receipt_zh.png").string()) + " " +
                          quote(lector::test::fixture("fixtures/hunyuan/doc_en.png").string()));
        LECTOR_CHECK_MSG(r.rc == 0, runner << ": rc " << r.rc << "\n" << r.err);
        const auto results = jsonLines(r.out);
        LECTOR_CHECK_EQ(results.size(), size_t(2));
        const char* names[] = {"receipt_zh", "doc_en"};
        for (size_t i = 0; i < results.size() && i < 2; ++i) {
            const json& res = results[i];
            const json& want = golden.at("cases").at(names[i]);
            LECTOR_CHECK_MSG(res.at("error").is_null(), res.dump());
            LECTOR_CHECK_EQ(res.at("model").get<std::string>(), std::string("hunyuan-ocr-1.0"));
            // The prompt the engine built is the golden prefill, token for token in length (image block
            // from the preprocessed grid + the spotting prompt's 13 ids + the chat specials).
            LECTOR_CHECK_EQ(res.at("tokens").at("prompt").get<int>(), want.at("seq_len").get<int>());
            // The model's output is the golden greedy decode: every generated id reads back as "t<id>".
            std::string expected;
            for (int k = 0; k < 8; ++k) expected += "t" + std::to_string(want.at("greedy_ids")[k].get<int>());
            LECTOR_CHECK_EQ(res.at("raw").get<std::string>(), expected);
            LECTOR_CHECK_EQ(res.at("tokens").at("generated").get<int>(), 8);
            for (const char* stage : {"vision", "prefill", "decode", "total"})
                LECTOR_CHECK_MSG(res.at("timing_ms").contains(stage), res.at("timing_ms").dump());
        }
    }
    // An unknown runner is a usage error naming the option.
    const Run bad = cli("recognize --model hunyuan-ocr --model-dir " + quote(dir.string()) + " --runner turbo " +
                        quote(lector::test::fixture("fixtures/hunyuan/receipt_zh.png").string()));
    LECTOR_CHECK_EQ(bad.rc, 2);
    LECTOR_CHECK_MSG(bad.err.find("--runner") != std::string::npos, bad.err);
    // A KV cache smaller than the prompt (335 tokens): a clear error object for that image, exit 1.
    const Run small = cli("recognize --model hunyuan-ocr --model-dir " + quote(dir.string()) +
                          " --preset spotting --kv-cache-tokens 256 --format jsonl " +
                          quote(lector::test::fixture("fixtures/hunyuan/receipt_zh.png").string()));
    LECTOR_CHECK_EQ(small.rc, 1);
    const auto failed = jsonLines(small.out);
    LECTOR_CHECK(failed.size() == 1 && failed[0].at("error").is_object() &&
                 failed[0]["error"].at("code") == "prompt_too_long");
}
