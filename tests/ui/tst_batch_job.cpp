// Folder batches: progress is reported, a corrupt file becomes a failure without stopping the run,
// cancel stops mid-way, and a new job over the same output (also after the process was killed, with a
// cut-off last record) finishes the rest with every image exactly once. JSON Lines, CSV and one JSON
// per image (mirrored tree); the scripted backend makes cancel points exact, the real PP-OCR engine
// runs one small batch end to end.
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "core/doc/export_csv.h"
#include "core/doc/export_json.h"
#include "ui/batch_dialog.h"
#include "ui/batch_job.h"
#include "ui_test_support.h"

using namespace lector;
using ui::BatchFormat;
using ui::BatchJob;

namespace {

// src/img00.png ... (numImages, in sub-folders), plus src/sub1/broken.png (not an image).
QStringList makeTree(const QString& root, int numImages)
{
    QStringList rel;
    QDir(root).mkpath(QStringLiteral("sub1/sub2"));
    for (int i = 0; i < numImages; ++i) {
        const QString name = i % 3 == 0 ? QStringLiteral("img%1.png") : i % 3 == 1 ? QStringLiteral("sub1/img%1.png") : QStringLiteral("sub1/sub2/img%1.png");
        const QString r = name.arg(i, 2, 10, QLatin1Char('0'));
        QImage img(60 + i, 80, QImage::Format_RGB32);
        img.fill(Qt::white);
        img.save(QDir(root).filePath(r));
        rel << r;
    }
    QFile broken(QDir(root).filePath(QStringLiteral("sub1/broken.png")));
    broken.open(QIODevice::WriteOnly);
    broken.write("\x89PNG\r\n\x1a\n this is not really a png");
    rel << QStringLiteral("sub1/broken.png");
    QFile note(QDir(root).filePath(QStringLiteral("readme.txt")));
    note.open(QIODevice::WriteOnly);
    note.write("skip me");
    return rel;
}

ui::BatchOptions optionsFor(const QString& src, const QString& out, BatchFormat format)
{
    ui::BatchOptions o;
    o.sourceDir = src;
    o.outputDir = out;
    o.format = format;
    o.recursive = true;
    o.mirrorTree = true;
    o.maxInFlight = 3;
    o.requestTemplate.preset = "text";
    return o;
}

// Image names in the output, with how often each appears.
QMap<QString, int> imagesInOutput(const ui::BatchOptions& o, const QStringList& all)
{
    QMap<QString, int> seen;
    if (o.format == BatchFormat::JsonLines) {
        QFile f(BatchJob::outputPath(o));
        if (!f.open(QIODevice::ReadOnly)) return seen;
        for (const QByteArray& line : f.readAll().split('\n')) {
            if (line.trimmed().isEmpty()) continue;
            const QJsonObject obj = QJsonDocument::fromJson(line).object();
            if (!obj.isEmpty()) seen[obj.value(QStringLiteral("image")).toString()]++;
        }
    } else if (o.format == BatchFormat::Csv) {
        QFile f(BatchJob::outputPath(o));
        if (!f.open(QIODevice::ReadOnly)) return seen;
        const QByteArray bytes = f.readAll();
        const auto parsed = doc::parseCsv(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
        QString lastImage;
        for (size_t i = 1; i < parsed.records.size(); ++i) {
            const QString image = QString::fromStdString(parsed.records[i][0]);
            if (image != lastImage) seen[image]++;
            lastImage = image;
        }
    } else {
        for (const QString& r : all) {
            if (QFileInfo::exists(BatchJob::perImagePath(o, r))) seen[r]++;
        }
    }
    return seen;
}

}  // namespace

class TestBatchJob : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void runsAllAndSurvivesCorruptFile_data();
    void runsAllAndSurvivesCorruptFile();
    void cancelThenResumeNoRepeatsNoLosses_data();
    void cancelThenResumeNoRepeatsNoLosses();
    void resumesAfterKillWithCutTail();
    void pauseStopsSubmitting();
    void memoryStaysBounded();
    void dialogDrivesAJob();
    void realEngineBatch();
};

void TestBatchJob::runsAllAndSurvivesCorruptFile_data()
{
    QTest::addColumn<int>("format");
    QTest::newRow("jsonl") << static_cast<int>(BatchFormat::JsonLines);
    QTest::newRow("csv") << static_cast<int>(BatchFormat::Csv);
    QTest::newRow("json per image") << static_cast<int>(BatchFormat::JsonPerImage);
    QTest::newRow("txt per image") << static_cast<int>(BatchFormat::TextPerImage);
}

void TestBatchJob::runsAllAndSurvivesCorruptFile()
{
    QFETCH(int, format);
    QTemporaryDir src, out;
    const QStringList all = makeTree(src.path(), 9);
    ui::EngineBridge bridge;
    bridge.adopt(std::make_unique<test::FakeBackend>(2), {});
    const auto o = optionsFor(src.path(), out.path(), static_cast<BatchFormat>(format));
    BatchJob job(bridge, o);
    QSignalSpy progress(&job, &BatchJob::progressChanged);
    QSignalSpy failed(&job, &BatchJob::imageFailed);
    QSignalSpy finished(&job, &BatchJob::finished);
    job.start();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
    const auto summary = finished.at(0).at(0).value<ui::BatchSummary>();
    QCOMPARE(summary.total, 10);
    QCOMPARE(summary.processed, 10);
    QVERIFY(!summary.cancelled);
    QVERIFY(summary.fatalError.isEmpty());
    QCOMPARE(summary.failures.size(), 1);
    QCOMPARE(summary.failures.at(0).image, QStringLiteral("sub1/broken.png"));
    QCOMPARE(failed.count(), 1);
    // Progress counted up to the total, once per image, with a rate.
    QVERIFY(progress.count() >= 10);
    const auto last = progress.last().at(0).value<ui::BatchProgress>();
    QCOMPARE(last.done, 10);
    QCOMPARE(last.failed, 1);
    QVERIFY(last.imagesPerSecond > 0);
    const auto seen = imagesInOutput(o, all);
    for (const QString& r : all) {
        const bool textFailure = format == static_cast<int>(BatchFormat::TextPerImage) && r.contains(QStringLiteral("broken"));
        QCOMPARE(seen.value(r), textFailure ? 0 : 1);
    }
    if (format == static_cast<int>(BatchFormat::JsonPerImage)) {  // mirrored tree
        QVERIFY(QFileInfo::exists(QDir(out.path()).filePath(QStringLiteral("sub1/sub2/img02.png.json"))));
        QFile broken(QDir(out.path()).filePath(QStringLiteral("sub1/broken.png.json")));
        QVERIFY(broken.open(QIODevice::ReadOnly));
        QVERIFY(QJsonDocument::fromJson(broken.readAll()).object().value(QStringLiteral("error")).isObject());
    }
}

void TestBatchJob::cancelThenResumeNoRepeatsNoLosses_data() { runsAllAndSurvivesCorruptFile_data(); }

void TestBatchJob::cancelThenResumeNoRepeatsNoLosses()
{
    QFETCH(int, format);
    QTemporaryDir src, out;
    const QStringList all = makeTree(src.path(), 14);
    ui::EngineBridge bridge;
    auto backend = std::make_unique<test::FakeBackend>(40);
    auto* fake = backend.get();
    bridge.adopt(std::move(backend), {});
    const auto o = optionsFor(src.path(), out.path(), static_cast<BatchFormat>(format));
    int firstRun = 0;
    {
        BatchJob job(bridge, o);
        QSignalSpy finished(&job, &BatchJob::finished);
        job.start();
        QTRY_VERIFY_WITH_TIMEOUT(job.progress().done >= 5, 20000);
        job.cancel();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
        const auto s = finished.at(0).at(0).value<ui::BatchSummary>();
        QVERIFY(s.cancelled);
        firstRun = s.processed;
        QVERIFY(firstRun >= 5 && firstRun < all.size());
        QVERIFY(BatchJob::readManifest(out.path()).has_value());  // unfinished: offered for resume
    }
    const size_t servedBefore = fake->served().size();
    const auto firstSeen = imagesInOutput(o, all);
    QCOMPARE(firstSeen.size(), static_cast<qsizetype>(firstRun) -
                                   (format == static_cast<int>(BatchFormat::TextPerImage) && firstSeen.size() < firstRun ? 1 : 0));
    BatchJob again(bridge, o);
    QSignalSpy scanned(&again, &BatchJob::scanned);
    QSignalSpy finished(&again, &BatchJob::finished);
    again.start();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
    QCOMPARE(scanned.at(0).at(1).toInt(), firstRun);  // already done, skipped
    const auto s = finished.at(0).at(0).value<ui::BatchSummary>();
    QVERIFY(!s.cancelled);
    QCOMPARE(s.skipped, firstRun);
    QCOMPARE(s.processed, all.size() - firstRun);
    // The engine never saw a finished image again.
    std::set<std::string> servedAgain;
    const auto served = fake->served();
    for (size_t i = servedBefore; i < served.size(); ++i) QVERIFY(servedAgain.insert(served[i].imageName).second);
    for (const std::string& name : servedAgain)
        QVERIFY2(!firstSeen.contains(QString::fromStdString(name)), name.c_str());  // no repeats
    const auto seen = imagesInOutput(o, all);
    for (const QString& r : all) {
        const bool textFailure = format == static_cast<int>(BatchFormat::TextPerImage) && r.contains(QStringLiteral("broken"));
        QCOMPARE(seen.value(r), textFailure ? 0 : 1);
    }
    QVERIFY(!BatchJob::readManifest(out.path()).has_value());  // complete now
    QCOMPARE(s.failures.size(), 1);
}

void TestBatchJob::resumesAfterKillWithCutTail()
{
    QTemporaryDir src, out;
    const QStringList all = makeTree(src.path(), 8);
    ui::EngineBridge bridge;
    bridge.adopt(std::make_unique<test::FakeBackend>(30), {});
    const auto o = optionsFor(src.path(), out.path(), BatchFormat::JsonLines);
    {
        // "Kill": the job object disappears mid-run without finishing (no close, no summary).
        auto job = std::make_unique<BatchJob>(bridge, o);
        job->start();
        QTRY_VERIFY_WITH_TIMEOUT(job->progress().done >= 3, 20000);
        job.reset();
    }
    // And the kill cut the last record in half.
    QFile f(BatchJob::outputPath(o));
    QVERIFY(f.open(QIODevice::Append));
    f.write(R"({"image":"sub1/img04.png","width":6)");
    f.close();
    QTest::qWait(100);  // cancelled requests drain
    BatchJob again(bridge, o);
    QSignalSpy finished(&again, &BatchJob::finished);
    again.start();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
    const auto seen = imagesInOutput(o, all);
    for (const QString& r : all) QCOMPARE(seen.value(r), 1);
    QCOMPARE(seen.size(), all.size());
}

void TestBatchJob::pauseStopsSubmitting()
{
    QTemporaryDir src, out;
    makeTree(src.path(), 12);
    ui::EngineBridge bridge;
    bridge.adopt(std::make_unique<test::FakeBackend>(20), {});
    BatchJob job(bridge, optionsFor(src.path(), out.path(), BatchFormat::JsonLines));
    QSignalSpy finished(&job, &BatchJob::finished);
    job.start();
    QTRY_VERIFY_WITH_TIMEOUT(job.progress().done >= 2, 20000);
    job.pause();
    QCOMPARE(job.state(), BatchJob::State::Paused);
    QTRY_COMPARE_WITH_TIMEOUT(job.inFlight(), 0, 5000);  // in-flight images finish
    const int doneAtPause = job.progress().done;
    QTest::qWait(200);
    QCOMPARE(job.progress().done, doneAtPause);  // nothing new started
    QVERIFY(doneAtPause < 13);
    job.resume();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
    QCOMPARE(job.progress().done, 13);
}

void TestBatchJob::memoryStaysBounded()
{
    // In flight never exceeds maxInFlight, however many images there are.
    QTemporaryDir src, out;
    makeTree(src.path(), 30);
    ui::EngineBridge bridge;
    bridge.adopt(std::make_unique<test::FakeBackend>(3), {});
    auto o = optionsFor(src.path(), out.path(), BatchFormat::JsonLines);
    o.maxInFlight = 4;
    BatchJob job(bridge, o);
    int maxSeen = 0;
    int maxPending = 0;
    connect(&job, &BatchJob::progressChanged, this, [&] {
        maxSeen = std::max(maxSeen, job.inFlight());
        maxPending = std::max(maxPending, bridge.pendingCount());
    });
    QSignalSpy finished(&job, &BatchJob::finished);
    job.start();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
    QVERIFY(maxSeen <= 4);
    QVERIFY(maxPending <= 4);
}

void TestBatchJob::dialogDrivesAJob()
{
    QTemporaryDir src, out, cfg;
    makeTree(src.path(), 6);
    auto settings = test::tempSettings(cfg);
    ui::EngineBridge bridge;
    bridge.adopt(std::make_unique<test::FakeBackend>(5), {});
    ui::BatchDialog dialog(bridge, *settings, [] {
        engine::Request r;
        r.preset = "text";
        return r;
    });
    dialog.setSourceDir(src.path());
    dialog.setOutputDir(out.path());
    QSignalSpy done(&dialog, &ui::BatchDialog::batchFinished);
    dialog.startBatch();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 20000);
    QVERIFY(QFileInfo::exists(QDir(out.path()).filePath(QStringLiteral("lector-results.jsonl"))));
    // Defaults were remembered for next time.
    QCOMPARE(settings->value(ui::Settings::Key::BatchSourceDir).toString(), src.path());
}

void TestBatchJob::realEngineBatch()
{
    if (!test::realEngineAvailable()) QSKIP("PP-OCR models not fetched");
    LECTOR_SKIP_WITHOUT_SHARED();
    QTemporaryDir src, out;
    QDir(src.path()).mkpath(QStringLiteral("a"));
    QVERIFY(QFile::copy(test::ppocrFixture(QStringLiteral("doc_en.png")), QDir(src.path()).filePath(QStringLiteral("doc.png"))));
    QVERIFY(QFile::copy(test::ppocrFixture(QStringLiteral("receipt_zh.png")), QDir(src.path()).filePath(QStringLiteral("a/receipt.png"))));
    QFile bad(QDir(src.path()).filePath(QStringLiteral("a/cut.jpg")));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("\xff\xd8\xff\xe0 truncated jpeg");
    bad.close();
    ui::EngineBridge bridge;
    std::optional<bool> loaded;
    // A named lambda: its captures must outlive the suspended coroutine.
    auto load = [&]() -> QCoro::Task<> {
        const engine::EngineConfig config;  // named: GCC 12 destroys co_await temporaries twice
        loaded = (co_await bridge.load(config)).ok();
    };
    load();
    QTRY_VERIFY_WITH_TIMEOUT(loaded.has_value(), 60000);
    QVERIFY(*loaded);
    const auto o = optionsFor(src.path(), out.path(), BatchFormat::Csv);
    BatchJob job(bridge, o);
    QSignalSpy finished(&job, &BatchJob::finished);
    job.start();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    const auto s = finished.at(0).at(0).value<ui::BatchSummary>();
    QCOMPARE(s.total, 3);
    QCOMPARE(s.failures.size(), 1);
    QCOMPARE(s.failures.at(0).image, QStringLiteral("a/cut.jpg"));
    QFile csv(BatchJob::outputPath(o));
    QVERIFY(csv.open(QIODevice::ReadOnly));
    const QByteArray bytes = csv.readAll();
    QVERIFY(bytes.startsWith("\xEF\xBB\xBF"));  // UTF-8 BOM for spreadsheets
    const QString text = QString::fromUtf8(bytes);
    QVERIFY2(text.contains(QStringLiteral("04452371")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("Quarterly")) && text.contains(QStringLiteral("doc.png")), qPrintable(text));
}

QTEST_MAIN(TestBatchJob)
#include "tst_batch_job.moc"
