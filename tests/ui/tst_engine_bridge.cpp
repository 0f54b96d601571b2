// EngineBridge: engine callbacks (another thread) arrive on the GUI thread as queued calls, each
// ticket finishes exactly once, recognize() resumes the awaiting coroutine with the result, cancel
// works, model switches end old requests as "cancelled", and a failed load is reported.
#include <QCoroTask>
#include <QSignalSpy>
#include <QTest>
#include <QThread>

#include "fake_backend.h"
#include "ui/engine_bridge.h"
#include "ui_test_support.h"

using lector::test::FakeBackend;
using lector::ui::EngineBridge;

namespace {

lector::engine::Request requestFor(int w, int h, const std::string& name)
{
    lector::engine::Request r;
    r.imageName = name;
    r.image = std::make_shared<lector::Image>(w, h);
    return r;
}

}  // namespace

class TestEngineBridge : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void submitWithoutModelFails();
    void resultsArriveOnGuiThreadOncePerTicket();
    void recognizeResumesCoroutine();
    void cancelEndsAsCancelled();
    void switchingModelsCancelsOldRequests();
    void failedLoadIsReported();
};

void TestEngineBridge::submitWithoutModelFails()
{
    EngineBridge bridge;
    auto t = bridge.submit(requestFor(10, 10, "a"));
    QVERIFY(!t);
    QCOMPARE(QString::fromStdString(t.error().code), QStringLiteral("no_model"));
}

void TestEngineBridge::resultsArriveOnGuiThreadOncePerTicket()
{
    EngineBridge bridge;
    bridge.adopt(std::make_unique<FakeBackend>(1), {});
    QList<EngineBridge::Ticket> got;
    bool allOnGui = true;
    connect(&bridge, &EngineBridge::finished, this, [&](EngineBridge::Ticket t, const lector::doc::OcrResult& r) {
        allOnGui = allOnGui && QThread::currentThread() == qApp->thread();
        got << t;
        QCOMPARE(QString::fromStdString(r.image), QStringLiteral("img%1").arg(t));
    });
    QList<EngineBridge::Ticket> sent;
    for (int i = 0; i < 20; ++i) {
        auto t = bridge.submit(requestFor(80, 80, "img" + std::to_string(i + 1)));
        QVERIFY(t);
        sent << t.value();
    }
    QCOMPARE(bridge.pendingCount(), 20);
    QTRY_COMPARE_WITH_TIMEOUT(got.size(), 20, 10000);
    QVERIFY(allOnGui);
    std::sort(got.begin(), got.end());
    QCOMPARE(got, sent);
    QCOMPARE(bridge.pendingCount(), 0);
    QTest::qWait(50);
    QCOMPARE(got.size(), 20);  // never twice
}

void TestEngineBridge::recognizeResumesCoroutine()
{
    EngineBridge bridge;
    bridge.adopt(std::make_unique<FakeBackend>(5), {});
    std::optional<lector::doc::OcrResult> result;
    auto task = [&]() -> QCoro::Task<> {
        // Named arguments: GCC 12 destroys temporaries inside a co_await expression twice.
        const auto request = requestFor(100, 120, "coro.png");
        result = co_await bridge.recognize(request);
    };
    task();
    QVERIFY(!result);  // suspended, not blocked
    QTRY_VERIFY_WITH_TIMEOUT(result.has_value(), 5000);
    QCOMPARE(QString::fromStdString(result->image), QStringLiteral("coro.png"));
    QCOMPARE(result->lines.size(), size_t(3));  // 120 px / 40

    // A rejected submit resolves at once with the error.
    std::optional<lector::doc::OcrResult> rejected;
    auto bad = [&]() -> QCoro::Task<> {
        lector::engine::Request r;
        r.imageName = "none";
        rejected = co_await bridge.recognize(r);
    };
    bad();
    QVERIFY(rejected.has_value());
    QVERIFY(rejected->failed());
    QCOMPARE(QString::fromStdString(rejected->error->code), QStringLiteral("bad_request"));
}

void TestEngineBridge::cancelEndsAsCancelled()
{
    EngineBridge bridge;
    bridge.adopt(std::make_unique<FakeBackend>(300), {});
    QSignalSpy spy(&bridge, &EngineBridge::finished);
    auto a = bridge.submit(requestFor(40, 40, "a"));
    auto b = bridge.submit(requestFor(40, 40, "b"));
    QVERIFY(a && b);
    bridge.cancel(b.value());
    QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 2, 5000);
    for (const auto& args : spy) {
        const auto t = args.at(0).value<EngineBridge::Ticket>();
        const auto r = args.at(1).value<lector::doc::OcrResult>();
        if (t == b.value()) {
            QVERIFY(r.failed());
            QCOMPARE(QString::fromStdString(r.error->code), QStringLiteral("cancelled"));
        } else {
            QVERIFY(!r.failed());
        }
    }
}

void TestEngineBridge::switchingModelsCancelsOldRequests()
{
    EngineBridge bridge;
    bridge.adopt(std::make_unique<FakeBackend>(2000), {});
    QSignalSpy spy(&bridge, &EngineBridge::finished);
    auto t = bridge.submit(requestFor(40, 40, "old"));
    QVERIFY(t);
    QElapsedTimer timer;
    timer.start();
    bridge.adopt(std::make_unique<FakeBackend>(1, "hunyuan-ocr-1.0"), {});
    QVERIFY2(timer.elapsed() < 100, "retiring the old engine must not block the GUI thread");
    QCOMPARE(QString::fromStdString(bridge.info().model), QStringLiteral("hunyuan-ocr-1.0"));
    QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 1, 5000);
    const auto r = spy.at(0).at(1).value<lector::doc::OcrResult>();
    QCOMPARE(QString::fromStdString(r.error->code), QStringLiteral("cancelled"));
    auto fresh = bridge.submit(requestFor(40, 40, "new"));
    QVERIFY(fresh);
    QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 2, 5000);
}

void TestEngineBridge::failedLoadIsReported()
{
    EngineBridge bridge([](const lector::engine::EngineConfig&) -> lector::Result<std::unique_ptr<lector::ui::OcrBackend>> {
        return lector::makeError("model_not_found", "/nowhere/config.json: no such file");
    });
    QSignalSpy failed(&bridge, &EngineBridge::loadFailed);
    std::optional<bool> ok;
    auto task = [&]() -> QCoro::Task<> {
        const lector::engine::EngineConfig config;
        auto r = co_await bridge.load(config);
        ok = r.ok();
    };
    task();
    QTRY_VERIFY_WITH_TIMEOUT(ok.has_value(), 5000);
    QVERIFY(!*ok);
    QCOMPARE(failed.count(), 1);
    QVERIFY(failed.at(0).at(0).toString().contains(QStringLiteral("config.json")));
    QVERIFY(!bridge.isLoaded());
    QVERIFY(!bridge.isLoading());
}

QTEST_MAIN(TestEngineBridge)
#include "tst_engine_bridge.moc"
