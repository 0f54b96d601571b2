// ResultWriter and resume scanning: append + flush per image, a record cut off by a kill is ignored and
// removed before appending, failed writes (unwritable path, full disk, file-size limit) give
// "write_failed" naming the file and never damage what was written before.
#include "tests/support/lector_test.h"

#include <sys/resource.h>

#include <csignal>
#include <fstream>
#include <sstream>

#include "core/doc/export_csv.h"
#include "core/doc/export_json.h"
#include "core/doc/result_writer.h"

using namespace lector::doc;
namespace fs = std::filesystem;

namespace {

OcrResult result(const std::string& image, std::vector<std::string> texts)
{
    OcrResult r;
    r.image = image;
    r.width = 100;
    r.height = 50;
    r.model = "ppocr-v4";
    int y = 0;
    for (auto& t : texts) {
        TextLine l;
        l.text = t;
        l.box = {0, y, 90, y + 10};
        l.confidence = 0.5f;
        r.lines.push_back(l);
        r.text += (r.text.empty() ? "" : "\n") + t;
        y += 12;
    }
    return r;
}

std::string readFile(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void appendRaw(const fs::path& p, const std::string& bytes)
{
    std::ofstream(p, std::ios::binary | std::ios::app) << bytes;
}

std::string join(const std::set<std::string>& names)
{
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : "|") + n;
    return out;
}

std::string doneOf(const fs::path& p)
{
    auto d = readDoneImages(p);
    LECTOR_CHECK_MSG(d.ok(), d.error().message);
    return join(*d);
}

}  // namespace

LECTOR_TEST(outputFormatComesFromTheExtension)
{
    LECTOR_CHECK(outputFormatFromPath("out/RESULTS.JSONL").value() == OutputFormat::JsonLines);
    LECTOR_CHECK(outputFormatFromPath("a.ndjson").value() == OutputFormat::JsonLines);
    LECTOR_CHECK(outputFormatFromPath("a.csv").value() == OutputFormat::Csv);
    auto bad = outputFormatFromPath("a.txt");
    LECTOR_CHECK(!bad.ok());
    LECTOR_CHECK_EQ(bad.error().code, std::string("bad_output"));
    LECTOR_CHECK(bad.error().message.find("a.txt") != std::string::npos);
}

LECTOR_TEST(jsonlWriterWritesOneParsableLinePerImage)
{
    const auto p = lector::test::tempDir() / "out.jsonl";
    auto w = ResultWriter::open(p, OutputFormat::JsonLines, false);
    LECTOR_CHECK_MSG(w.ok(), w.error().message);
    LECTOR_CHECK((*w)->write(result("a.png", {"hello"})).ok());
    // Flushed per image: the file already holds it while the writer is open.
    LECTOR_CHECK_EQ(readFile(p), toJsonLine(result("a.png", {"hello"})) + "\n");
    LECTOR_CHECK((*w)->write(makeErrorResult("b.png", lector::makeError("decode_failed", "b.png: bad"))).ok());
    LECTOR_CHECK((*w)->write(result("c d.png", {"x", "y"})).ok());
    LECTOR_CHECK((*w)->close().ok());
    auto all = resultsFromJsonText(readFile(p), p.string());
    LECTOR_CHECK_MSG(all.ok(), all.error().message);
    LECTOR_CHECK_EQ(all->size(), std::size_t(3));
    LECTOR_CHECK_EQ((*all)[2].lines.size(), std::size_t(2));
    LECTOR_CHECK_EQ(doneOf(p), std::string("a.png|b.png|c d.png"));
    auto scan = scanOutput(p, OutputFormat::JsonLines);
    LECTOR_CHECK(scan.ok());
    LECTOR_CHECK_EQ(join(scan->failed), std::string("b.png"));
}

LECTOR_TEST(jsonlResumeIgnoresAndRemovesACutOffLastLine)
{
    const auto p = lector::test::tempDir() / "out.jsonl";
    {
        auto w = ResultWriter::open(p, OutputFormat::JsonLines, false);
        LECTOR_CHECK((*w)->write(result("a.png", {"one"})).ok());
        LECTOR_CHECK((*w)->write(result("b.png", {"two"})).ok());
    }
    const std::string good = readFile(p);
    appendRaw(p, R"({"image":"c.png","width":100,"hei)");  // killed mid-write
    auto scan = scanOutput(p, OutputFormat::JsonLines);
    LECTOR_CHECK(scan.ok());
    LECTOR_CHECK(scan->cutTail);
    LECTOR_CHECK_EQ(scan->validBytes, good.size());
    LECTOR_CHECK_EQ(doneOf(p), std::string("a.png|b.png"));

    auto w = ResultWriter::open(p, OutputFormat::JsonLines, true);
    LECTOR_CHECK_MSG(w.ok(), w.error().message);
    LECTOR_CHECK_EQ(readFile(p), good);  // the fragment is gone before anything is appended
    LECTOR_CHECK((*w)->write(result("c.png", {"three"})).ok());
    LECTOR_CHECK_EQ(readFile(p), good + toJsonLine(result("c.png", {"three"})) + "\n");
    LECTOR_CHECK_EQ(doneOf(p), std::string("a.png|b.png|c.png"));
}

LECTOR_TEST(cancelledImagesAreNotDone)
{
    const auto p = lector::test::tempDir() / "out.jsonl";
    auto w = ResultWriter::open(p, OutputFormat::JsonLines, false);
    LECTOR_CHECK((*w)->write(result("a.png", {"one"})).ok());
    LECTOR_CHECK((*w)->write(makeErrorResult("b.png", lector::makeError("cancelled", "b.png: cancelled"))).ok());
    LECTOR_CHECK((*w)->close().ok());
    LECTOR_CHECK_EQ(doneOf(p), std::string("a.png"));
}

LECTOR_TEST(missingOutputIsAnEmptyResume)
{
    LECTOR_CHECK(doneOf(lector::test::tempDir() / "none.jsonl").empty());
    LECTOR_CHECK(doneOf(lector::test::tempDir() / "none.csv").empty());
}

LECTOR_TEST(csvWriterWritesHeaderOnceAndResumesAfterACutImage)
{
    const auto p = lector::test::tempDir() / "out.csv";
    {
        auto w = ResultWriter::open(p, OutputFormat::Csv, false);
        LECTOR_CHECK_MSG(w.ok(), w.error().message);
        LECTOR_CHECK((*w)->write(result("a.png", {"alpha", "beta"})).ok());
        LECTOR_CHECK((*w)->write(makeErrorResult("b.png", lector::makeError("decode_failed", "b.png: bad"))).ok());
    }
    const std::string good = readFile(p);
    LECTOR_CHECK_EQ(good, csvLineHeader() + csvLineRows(result("a.png", {"alpha", "beta"})) +
                              "b.png,,error: decode_failed: b.png: bad,,,,,\r\n");
    // c.png has three rows; the kill came in its second row.
    const std::string cRows = csvLineRows(result("c.png", {"x", "y", "z"}));
    appendRaw(p, cRows.substr(0, cRows.find("\r\n") + 2 + 9));
    auto scan = scanOutput(p, OutputFormat::Csv);
    LECTOR_CHECK_MSG(scan.ok(), scan.error().message);
    LECTOR_CHECK(scan->cutTail);
    LECTOR_CHECK_EQ(scan->validBytes, good.size());  // c.png's complete first row goes too
    LECTOR_CHECK_EQ(join(scan->done), std::string("a.png|b.png"));
    LECTOR_CHECK_EQ(join(scan->failed), std::string("b.png"));

    auto w = ResultWriter::open(p, OutputFormat::Csv, true);
    LECTOR_CHECK_MSG(w.ok(), w.error().message);
    LECTOR_CHECK((*w)->write(result("c.png", {"x", "y", "z"})).ok());
    LECTOR_CHECK((*w)->close().ok());
    LECTOR_CHECK_EQ(readFile(p), good + cRows);  // one header, one BOM, c.png once
    LECTOR_CHECK_EQ(doneOf(p), std::string("a.png|b.png|c.png"));
}

LECTOR_TEST(csvResumeKeepsTheImageBeforeACutNewImage)
{
    const auto p = lector::test::tempDir() / "out.csv";
    {
        auto w = ResultWriter::open(p, OutputFormat::Csv, false);
        LECTOR_CHECK((*w)->write(result("a.png", {"alpha", "beta"})).ok());
    }
    const std::string good = readFile(p);
    appendRaw(p, "\"b, the second.png\",1,ga");
    auto scan = scanOutput(p, OutputFormat::Csv);
    LECTOR_CHECK(scan.ok());
    LECTOR_CHECK_EQ(scan->validBytes, good.size());
    LECTOR_CHECK_EQ(join(scan->done), std::string("a.png"));
    // A header cut by a kill: nothing complete, the writer starts the file again.
    const auto q = lector::test::tempDir() / "cut_header.csv";
    appendRaw(q, "\xEF\xBB\xBFimage,li");
    auto w = ResultWriter::open(q, OutputFormat::Csv, true);
    LECTOR_CHECK_MSG(w.ok(), w.error().message);
    LECTOR_CHECK((*w)->write(result("z.png", {})).ok());
    LECTOR_CHECK_EQ(readFile(q), csvLineHeader() + "z.png,,,,,,,\r\n");
}

LECTOR_TEST(refusesToAppendToAForeignCsv)
{
    const auto p = lector::test::tempDir() / "other.csv";
    appendRaw(p, "name,amount\r\nfoo,1\r\n");
    auto w = ResultWriter::open(p, OutputFormat::Csv, true);
    LECTOR_CHECK(!w.ok());
    LECTOR_CHECK_EQ(w.error().code, std::string("bad_output"));
    LECTOR_CHECK(w.error().message.find(p.string()) != std::string::npos);
    LECTOR_CHECK_EQ(readFile(p), std::string("name,amount\r\nfoo,1\r\n"));
}

LECTOR_TEST(unwritablePathGivesWriteFailedNamingTheFile)
{
    const auto missingDir = lector::test::tempDir() / "no" / "such" / "dir" / "out.jsonl";
    auto w = ResultWriter::open(missingDir, OutputFormat::JsonLines, false);
    LECTOR_CHECK(!w.ok());
    LECTOR_CHECK_EQ(w.error().code, std::string("write_failed"));
    LECTOR_CHECK(w.error().message.find(missingDir.string()) != std::string::npos);
    const auto dir = lector::test::tempDir();
    auto d = ResultWriter::open(dir, OutputFormat::Csv, false);
    LECTOR_CHECK(!d.ok());
    LECTOR_CHECK_EQ(d.error().code, std::string("write_failed"));
}

LECTOR_TEST(fullDiskGivesWriteFailed)
{
    if (!fs::exists("/dev/full")) LECTOR_SKIP("/dev/full not available");
    auto w = ResultWriter::open("/dev/full", OutputFormat::JsonLines, true);
    LECTOR_CHECK_MSG(w.ok(), w.error().message);
    auto r = (*w)->write(result("a.png", {"hello"}));
    LECTOR_CHECK(!r.ok());
    LECTOR_CHECK_EQ(r.error().code, std::string("write_failed"));
    LECTOR_CHECK(r.error().message.find("/dev/full") != std::string::npos);
    LECTOR_CHECK(r.error().message.find("No space left") != std::string::npos);
    LECTOR_CHECK_EQ((*w)->writtenCount(), std::size_t(0));
    auto csv = ResultWriter::open("/dev/full", OutputFormat::Csv, false);  // the header write fails
    LECTOR_CHECK(!csv.ok());
    LECTOR_CHECK_EQ(csv.error().code, std::string("write_failed"));
}

LECTOR_TEST(failedWriteKeepsEverythingWrittenBefore)
{
    // A file-size limit makes the kernel accept part of a record and then refuse: like a disk filling up.
    const auto p = lector::test::tempDir() / "limited.jsonl";
    auto w = ResultWriter::open(p, OutputFormat::JsonLines, false);
    LECTOR_CHECK((*w)->write(result("a.png", {"one"})).ok());
    LECTOR_CHECK((*w)->write(result("b.png", {"two"})).ok());
    const std::string good = readFile(p);

    rlimit old{};
    LECTOR_CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = old;
    limited.rlim_cur = good.size() + 40;
    LECTOR_CHECK(setrlimit(RLIMIT_FSIZE, &limited) == 0);
    auto r = (*w)->write(result("c.png", {std::string(500, 'x')}));
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, oldHandler);

    LECTOR_CHECK(!r.ok());
    LECTOR_CHECK_EQ(r.error().code, std::string("write_failed"));
    LECTOR_CHECK(r.error().message.find(p.string()) != std::string::npos);
    LECTOR_CHECK_EQ(readFile(p), good);  // the 40 bytes that made it were taken back
    LECTOR_CHECK_EQ(doneOf(p), std::string("a.png|b.png"));
    // Space is back: the same writer goes on.
    LECTOR_CHECK((*w)->write(result("c.png", {"three"})).ok());
    LECTOR_CHECK_EQ(readFile(p), good + toJsonLine(result("c.png", {"three"})) + "\n");
}
