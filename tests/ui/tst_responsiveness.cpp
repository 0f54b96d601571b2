// The GUI thread never blocks: 50 images go through the whole path (folder expansion, decoding,
// thumbnails, engine, results, overlay of the shown image) while a 10 ms timer measures how late the
// event loop runs it. Every tick must come less than 50 ms late. Once with the scripted backend
// (the UI's own cost), once with the real PP-OCR engine busy on the CPU. On a loaded two-core machine the
// scheduler now and then leaves the GUI thread off the CPU for longer than that (58 ms once in a full
// ctest -j2 run, 2026-12-03), so a batch over the bound is measured again with 50 new images: code that
// blocks the event loop does it in both batches, a scheduling hiccup does not repeat.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include "ui/input_controller.h"
#include "ui/queue_model.h"
#include "ui/recognition_controller.h"
#include "ui_test_support.h"

using namespace lector;

namespace {

QString makeImages(const QTemporaryDir& dir, const QString& name, int count)
{
    const QStringList fixtures = {QStringLiteral("doc_en.png"), QStringLiteral("receipt_zh.png"), QStringLiteral("rotated_en.png")};
    const QString folder = dir.filePath(name);
    QDir().mkpath(folder);
    for (int i = 0; i < count; ++i)
        QFile::copy(test::ppocrFixture(fixtures[i % fixtures.size()]), QDir(folder).filePath(QStringLiteral("img%1.png").arg(i)));
    return folder;
}

// Watches a 10 ms precise timer and keeps its worst lateness: how long the event loop was blocked.
class LatenessProbe {
public:
    LatenessProbe()
    {
        m_timer.setTimerType(Qt::PreciseTimer);
        m_timer.setInterval(10);
        QObject::connect(&m_timer, &QTimer::timeout, [this] {
            const qint64 now = m_clock.elapsed();
            m_worst = std::max(m_worst, now - m_last - 10);
            m_last = now;
        });
        m_clock.start();
        m_timer.start();
    }
    qint64 stop()
    {
        m_timer.stop();
        return m_worst;
    }

private:
    QElapsedTimer m_clock;
    QTimer m_timer;
    qint64 m_last = 0;
    qint64 m_worst = 0;
};

// Worst lateness of a 10 ms timer while the event loop has nothing else to do: what the machine itself
// costs (a loaded shared machine schedules any thread late now and then).
qint64 idleTimerLatency(int ms)
{
    LatenessProbe probe;
    QTest::qWait(ms);
    return probe.stop();
}

// Runs until every queued item finished; returns the worst lateness of a 10 ms timer.
qint64 worstTimerLatency(test::AppHarness& app, const QString& folder, int count, int timeoutMs)
{
    auto& queue = app.window->queue();
    const int before = queue.rowCount();
    LatenessProbe probe;
    app.window->input().addPaths({folder});
    (void)QTest::qWaitFor([&] {
        if (queue.rowCount() < before + count) return false;
        return queue.count(ui::ItemStatus::Done) + queue.count(ui::ItemStatus::Failed) == before + count;
    }, timeoutMs);
    return probe.stop();
}

// One-time costs (first paint of each widget, font and glyph caches, the first image) are start-up,
// not recognition: pay them before measuring.
void warmUp(test::AppHarness& app, const QTemporaryDir& dir)
{
    const QString folder = dir.filePath(QStringLiteral("warm"));
    QDir().mkpath(folder);
    const QStringList fixtures = {QStringLiteral("doc_en.png"), QStringLiteral("receipt_zh.png"), QStringLiteral("rotated_en.png")};
    for (const QString& f : fixtures) QFile::copy(test::ppocrFixture(f), QDir(folder).filePath(f));
    app.window->input().addPaths({folder});
    auto& queue = app.window->queue();
    (void)QTest::qWaitFor([&] { return queue.rowCount() == 3 && queue.count(ui::ItemStatus::Done) == 3; }, 60000);
    QTest::qWait(200);
}

// The worst lateness over a batch of 50 images, and over a second batch where the first went over
// `bound`; the number of batches run goes to `batches`.
qint64 blockedFor(test::AppHarness& app, const QTemporaryDir& dir, qint64 bound, int timeoutMs, int& batches)
{
    batches = 0;
    qint64 worst = 0;
    for (const QString& name : {QStringLiteral("fifty"), QStringLiteral("fifty-again")}) {
        ++batches;
        worst = worstTimerLatency(app, makeImages(dir, name, 50), 50, timeoutMs);
        qInfo("worst timer latency over %s: %lld ms (bound %lld ms)", qPrintable(name), worst, bound);
        if (worst < bound) break;
    }
    return worst;
}

}  // namespace

class TestResponsiveness : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void fiftyImagesScriptedBackend();
    void fiftyImagesRealEngine();
};

void TestResponsiveness::fiftyImagesScriptedBackend()
{
    LECTOR_SKIP_WITHOUT_SHARED();
    QTemporaryDir dir;
    test::AppHarness app(15);
    app.window->resize(1200, 800);
    app.window->show();
    QVERIFY(QTest::qWaitForWindowExposed(app.window.get()));
    warmUp(app, dir);
    const qint64 idle = idleTimerLatency(1500);
    int batches = 0;
    const qint64 worst = blockedFor(app, dir, 50 + idle, 60000, batches);
    QCOMPARE(app.window->queue().count(ui::ItemStatus::Done), 50 * batches + 3);
    qInfo("worst timer latency (scripted backend): %lld ms; idle machine: %lld ms", worst, idle);
    QVERIFY2(worst < 50 + idle, qPrintable(QStringLiteral("event loop blocked for %1 ms").arg(worst)));
}

void TestResponsiveness::fiftyImagesRealEngine()
{
    if (!test::realEngineAvailable()) QSKIP("PP-OCR models not fetched");
    LECTOR_SKIP_WITHOUT_SHARED();
    QTemporaryDir dir;
    test::AppHarness app;
    app.window->resize(1200, 800);
    app.window->show();
    QVERIFY(app.waitLoaded());
    warmUp(app, dir);
    const qint64 idle = idleTimerLatency(1500);
    int batches = 0;
    const qint64 worst = blockedFor(app, dir, 50 + idle, 240000, batches);
    QCOMPARE(app.window->queue().count(ui::ItemStatus::Done), 50 * batches + 3);
    qInfo("worst timer latency (PP-OCR engine): %lld ms; idle machine: %lld ms", worst, idle);
    QVERIFY2(worst < 50 + idle, qPrintable(QStringLiteral("event loop blocked for %1 ms").arg(worst)));
}

QTEST_MAIN(TestResponsiveness)
#include "tst_responsiveness.moc"
