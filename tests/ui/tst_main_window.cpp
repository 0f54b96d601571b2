// The main window on the real PP-OCRv4 engine: dropping file and folder URLs queues exactly the
// images; pasting an image runs OCR; the overlay has one item per result line where the line is;
// selecting a box selects its row and the other way round; presets switch prompts and requests.
#include <QApplication>
#include <QClipboard>
#include <QFile>
#include <QMimeData>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTest>
#include <QComboBox>
#include <QDropEvent>
#include <QLabel>

#include "ui/image_view.h"
#include "ui/input_controller.h"
#include "ui/overlay_item.h"
#include "ui/preset_panel.h"
#include "ui/queue_model.h"
#include "ui/queue_view.h"
#include "ui/recognition_controller.h"
#include "ui/result_presenter.h"
#include "ui/results_panel.h"
#include "ui_test_support.h"

using namespace lector;

namespace {

// Levenshtein distance, for "close enough" text checks (OCR drops spaces around CJK).
int editDistance(const QString& a, const QString& b)
{
    QVector<int> prev(b.size() + 1), cur(b.size() + 1);
    for (int j = 0; j <= b.size(); ++j) prev[j] = j;
    for (int i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (int j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

QString strip(QString s) { return s.remove(QLatin1Char(' ')); }

}  // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void dropQueuesFilesAndFolders();
    void pasteRunsOcr();
    void overlayMatchesLines();
    void selectionSyncsBothWays();
    void presetsSwitchPrompts();

private:
    std::unique_ptr<test::AppHarness> m_app;
    QTemporaryDir m_tree;
};

void TestMainWindow::initTestCase()
{
    if (!test::realEngineAvailable()) QSKIP("PP-OCR models not fetched (models/ppocr-v4)");
    LECTOR_SKIP_WITHOUT_SHARED();
    m_app = std::make_unique<test::AppHarness>();
    m_app->window->resize(1200, 800);
    m_app->window->show();
    m_app->window->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(m_app->window.get()));
    QVERIFY2(m_app->waitLoaded(), "PP-OCR engine did not load");
    QCOMPARE(QString::fromStdString(m_app->bridge->info().model), QStringLiteral("ppocr-v4"));
}

void TestMainWindow::cleanupTestCase() { m_app.reset(); }

void TestMainWindow::dropQueuesFilesAndFolders()
{
    // tree/a.png, tree/sub/b.png, tree/sub/notes.txt, tree/sub/deeper/c.jpg ; plus a loose file.
    QDir root(m_tree.path());
    QVERIFY(root.mkpath(QStringLiteral("folder/sub/deeper")));
    QVERIFY(QFile::copy(test::ppocrFixture(QStringLiteral("doc_en.png")), root.filePath(QStringLiteral("folder/a.png"))));
    QVERIFY(QFile::copy(test::ppocrFixture(QStringLiteral("receipt_zh.png")), root.filePath(QStringLiteral("folder/sub/b.png"))));
    QImage blank(50, 30, QImage::Format_RGB32);
    blank.fill(Qt::white);
    QVERIFY(blank.save(root.filePath(QStringLiteral("folder/sub/deeper/c.jpg"))));
    QFile txt(root.filePath(QStringLiteral("folder/sub/notes.txt")));
    QVERIFY(txt.open(QIODevice::WriteOnly));
    txt.write("not an image");
    txt.close();
    QVERIFY(QFile::copy(test::ppocrFixture(QStringLiteral("rotated_en.png")), root.filePath(QStringLiteral("loose.png"))));

    auto& queue = m_app->window->queue();
    const int before = queue.rowCount();
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(root.filePath(QStringLiteral("loose.png"))),
                  QUrl::fromLocalFile(root.filePath(QStringLiteral("folder")))});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_app->window.get(), &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_app->window.get(), &drop);
    QVERIFY(drop.isAccepted());

    QTRY_COMPARE_WITH_TIMEOUT(queue.rowCount(), before + 4, 5000);
    QStringList names;
    for (int r = before; r < queue.rowCount(); ++r) names << QFileInfo(queue.at(r).path).fileName();
    QCOMPARE(names, QStringList({QStringLiteral("loose.png"), QStringLiteral("a.png"), QStringLiteral("b.png"),
                                 QStringLiteral("c.jpg")}));
    // The first dropped image is shown, and all of them get recognised.
    QCOMPARE(m_app->window->presenter().currentId(), queue.idAt(before));
    auto allFinished = [&] {
        for (int r = before; r < queue.rowCount(); ++r) {
            const auto s = queue.at(r).status;
            if (s != ui::ItemStatus::Done && s != ui::ItemStatus::Failed) return false;
        }
        return true;
    };
    QTRY_VERIFY_WITH_TIMEOUT(allFinished(), 60000);
    for (int r = before; r < queue.rowCount(); ++r) {
        QCOMPARE(queue.at(r).status, ui::ItemStatus::Done);
        QVERIFY(queue.at(r).latencyMs > 0);
        QVERIFY(!queue.at(r).thumbnail.isNull());
    }
    const auto* loose = queue.find(queue.idAt(before));
    QVERIFY(loose->result);
    QVERIFY2(strip(QString::fromStdString(loose->result->text)).contains(QStringLiteral("Upsidedownlabel42")),
             loose->result->text.c_str());
}

void TestMainWindow::pasteRunsOcr()
{
    QImage image(test::ppocrFixture(QStringLiteral("doc_en.png")));
    QVERIFY(!image.isNull());
    QApplication::clipboard()->setImage(image);
    auto& queue = m_app->window->queue();
    const int before = queue.rowCount();
    QSignalSpy finished(&m_app->window->recognition(), &ui::RecognitionController::itemFinished);
    QTest::keyClick(m_app->window.get(), Qt::Key_V, Qt::ControlModifier);
    QTRY_COMPARE_WITH_TIMEOUT(queue.rowCount(), before + 1, 2000);
    const quint64 id = queue.idAt(before);
    QCOMPARE(m_app->window->presenter().currentId(), id);
    QTRY_VERIFY_WITH_TIMEOUT(queue.find(id)->status == ui::ItemStatus::Done, 30000);
    const QString text = m_app->window->resultsPanel()->plainText();
    const QStringList expected = {QStringLiteral("Quarterly Report 2026"), QStringLiteral("Revenue grew 14.2% to $3.4 million."),
                                  QStringLiteral("Contact: ops@example.org, +1 555 0100")};
    const QStringList lines = text.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), expected.size());
    for (int i = 0; i < expected.size(); ++i)
        QVERIFY2(editDistance(strip(lines[i]), strip(expected[i])) <= 1, qPrintable(lines[i]));
    // The status bar reports the request's latency split.
    QVERIFY(m_app->window->statusLine()->latencyText().contains(QStringLiteral("det")));
}

void TestMainWindow::overlayMatchesLines()
{
    auto& queue = m_app->window->queue();
    const quint64 id = m_app->window->presenter().currentId();
    const auto* item = queue.find(id);
    QVERIFY(item && item->result);
    auto* view = m_app->window->imageView();
    QTRY_VERIFY(view->hasImage());
    const auto items = view->overlayItems();
    QCOMPARE(items.size(), static_cast<qsizetype>(item->result->lines.size()));
    // Reference boxes of doc_en.png (onnxruntime pipeline, shared/fixtures/ppocr/reference.json).
    const QList<QRect> reference = {QRect(QPoint(39, 34), QPoint(358, 63)), QRect(QPoint(36, 105), QPoint(447, 129)),
                                    QRect(QPoint(38, 162), QPoint(496, 187))};
    for (int i = 0; i < items.size(); ++i) {
        const auto& line = item->result->lines[static_cast<size_t>(i)];
        const QRectF drawn = items[i]->mapToScene(items[i]->boundingRect()).boundingRect();
        const QRectF box(QPointF(line.box[0], line.box[1]), QPointF(line.box[2], line.box[3]));
        // The item sits on its line's box (bounding rect adds half the pen at most).
        QVERIFY2(std::abs(drawn.left() - box.left()) <= 3 && std::abs(drawn.top() - box.top()) <= 3 &&
                     std::abs(drawn.right() - box.right()) <= 3 && std::abs(drawn.bottom() - box.bottom()) <= 3,
                 qPrintable(QStringLiteral("line %1").arg(i)));
        const QRectF ref(reference[i]);
        const QRectF inter = ref.intersected(box);
        const double iou = inter.width() * inter.height() /
                           (ref.width() * ref.height() + box.width() * box.height() - inter.width() * inter.height());
        QVERIFY2(iou > 0.6, qPrintable(QStringLiteral("line %1 IoU %2").arg(i).arg(iou)));
        QCOMPARE(items[i]->text(), QString::fromStdString(line.text));
        QVERIFY(items[i]->toolTip().contains(items[i]->text().toHtmlEscaped()));
    }
    // Toggle hides and shows them all.
    view->setOverlayVisible(false);
    for (auto* it : items) QVERIFY(!it->isVisible());
    view->setOverlayVisible(true);
    for (auto* it : items) QVERIFY(it->isVisible());
}

void TestMainWindow::selectionSyncsBothWays()
{
    auto* view = m_app->window->imageView();
    auto* table = m_app->window->resultsPanel()->linesTable();
    const auto items = view->overlayItems();
    QVERIFY(items.size() >= 2);
    view->fitToWindow();
    QApplication::processEvents();

    // Click on the second box in the image -> second row selected.
    const QPoint inView = view->mapFromScene(items[1]->mapToScene(items[1]->boundingRect().center()));
    QTest::mouseClick(view->viewport(), Qt::LeftButton, Qt::NoModifier, inView);
    QTRY_COMPARE(m_app->window->resultsPanel()->selectedLines(), QList<int>({1}));
    QVERIFY(items[1]->isSelected());

    // Select the first row in the table -> only the first box selected.
    table->selectRow(0);
    QTRY_COMPARE(view->selectedLines(), QList<int>({0}));
    QVERIFY(!items[1]->isSelected());

    // Copy selected boxes.
    m_app->window->actions().copySelection->trigger();
    QCOMPARE(QApplication::clipboard()->text(), items[0]->text());
}

void TestMainWindow::presetsSwitchPrompts()
{
    auto* panel = m_app->window->presetPanel();
    QVERIFY(panel->setCurrentPreset(QStringLiteral("card")));
    QCOMPARE(QString::fromStdString(panel->requestTemplate().preset), QStringLiteral("card"));
    QVERIFY(panel->fieldNames().contains(QStringLiteral("公民身份号码")));
    // PP-OCR is loaded: the panel explains label matching instead of a prompt.
    QVERIFY(panel->canRun());

    QVERIFY(panel->setCurrentPreset(QStringLiteral("parse")));
    const QString parsePrompt = panel->promptPreview();
    QVERIFY(panel->setCurrentPreset(QStringLiteral("translate")));
    const QString translatePrompt = panel->promptPreview();
    QVERIFY(!parsePrompt.isEmpty());
    QVERIFY(!translatePrompt.isEmpty());
    QVERIFY(parsePrompt != translatePrompt);
    // The VLM-only preset says it cannot run on PP-OCR instead of failing silently.
    QVERIFY(!panel->canRun());
    const auto notices = panel->findChildren<QLabel*>();
    bool saysSo = false;
    for (auto* l : notices) saysSo = saysSo || (l->isVisible() && l->text().contains(QStringLiteral("HunyuanOCR")));
    QVERIFY(saysSo);

    // Changing the target language changes the prompt and the request.
    panel->setTranslateTarget(QStringLiteral("Chinese"));
    QCOMPARE(QString::fromStdString(panel->requestTemplate().targetLanguage), QStringLiteral("zh"));
    QVERIFY(panel->promptPreview() != translatePrompt);

    // Custom prompt goes into the request as is.
    QVERIFY(panel->setCurrentPreset(QStringLiteral("custom")));
    panel->setCustomPrompt(QStringLiteral("List every price."));
    QCOMPARE(QString::fromStdString(panel->requestTemplate().prompt), QStringLiteral("List every price."));
    QCOMPARE(panel->promptPreview(), QStringLiteral("List every price."));

    // Run an invoice through PP-OCR: fields come from printed labels.
    QVERIFY(panel->setCurrentPreset(QStringLiteral("invoice")));
    auto& queue = m_app->window->queue();
    const auto ids = m_app->window->recognition().enqueueFiles({test::ppocrFixture(QStringLiteral("receipt_zh.png"))});
    QTRY_VERIFY_WITH_TIMEOUT(queue.find(ids[0])->status == ui::ItemStatus::Done, 30000);
    const auto& result = *queue.find(ids[0])->result;
    QCOMPARE(QString::fromStdString(result.preset), QStringLiteral("invoice"));
    QStringList keys;
    for (const auto& [k, v] : result.fields) keys << QString::fromStdString(k) + QLatin1Char('=') + QString::fromStdString(v);
    QVERIFY2(keys.join(QLatin1Char(';')).contains(QStringLiteral("04452371")), qPrintable(keys.join(QLatin1Char(';'))));
    m_app->window->showItem(ids[0]);
    QTRY_VERIFY(m_app->window->resultsPanel()->fieldsTable()->rowCount() == static_cast<int>(result.fields.size()));
    panel->setCurrentPreset(QStringLiteral("text"));
}

QTEST_MAIN(TestMainWindow)
#include "tst_main_window.moc"
