// The zh_CN translation loads and leaves no visible English: the main window, its menus and every
// dialog are built under zh_CN, and each visible text (labels, buttons, actions, menus, tabs, group
// boxes, headers, combo items, window titles, placeholders, tooltips) must be Chinese. Technical names
// (model names, formats, units) are allowed through a short list.
#include <QAbstractButton>
#include <QAction>
#include <QComboBox>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>

#include "ui/batch_dialog.h"
#include "ui/download_dialog.h"
#include "ui/language.h"
#include "ui/settings_dialog.h"
#include "ui_test_support.h"

using namespace lector;

namespace {

// Words that stay as they are in Chinese text: product, model and format names, units.
const QStringList kAllowed = {
    QStringLiteral("Lector"), QStringLiteral("PP-OCRv4"), QStringLiteral("PP-OCR"), QStringLiteral("HunyuanOCR"),
    QStringLiteral("Hugging Face"), QStringLiteral("tencent/HunyuanOCR"), QStringLiteral("v1.0"), QStringLiteral("CPU"),
    QStringLiteral("GPU"), QStringLiteral("CUDA"), QStringLiteral("JSON Lines"), QStringLiteral("JSON"), QStringLiteral("CSV"),
    QStringLiteral("Markdown"), QStringLiteral("TXT"), QStringLiteral("float16"), QStringLiteral("bfloat16"),
    QStringLiteral("float32"), QStringLiteral("English"), QStringLiteral("config.json"), QStringLiteral("tokenizer.json"),
    QStringLiteral("Ctrl"), QStringLiteral("Shift"), QStringLiteral("ms"), QStringLiteral("img/s"), QStringLiteral("ETA"),
    QStringLiteral("GB"), QStringLiteral("OCR"), QStringLiteral("ID"), QStringLiteral("Esc"), QStringLiteral("F5"),
    QStringLiteral("tok/s"), QStringLiteral("cpu"), QStringLiteral("HTML"), QStringLiteral("LaTeX")};

QString untranslatedPart(QString text)
{
    text.remove(QLatin1Char('&'));
    // Longest first, so "tencent/HunyuanOCR" goes before "HunyuanOCR" leaves "tencent/" behind.
    static const QStringList allowed = [] {
        QStringList l = kAllowed;
        std::sort(l.begin(), l.end(), [](const QString& a, const QString& b) { return a.size() > b.size(); });
        return l;
    }();
    for (const QString& w : allowed) text.remove(w);
    // Three or more Latin letters in a row is a word someone forgot to translate.
    static const QRegularExpression word(QStringLiteral("[A-Za-z]{3,}"));
    const auto m = word.match(text);
    return m.hasMatch() ? m.captured(0) : QString();
}

void collect(QWidget* root, QStringList& texts)
{
    auto add = [&](const QString& t, const QString& where) {
        if (!t.trimmed().isEmpty()) texts << where + QStringLiteral(": ") + t;
    };
    add(root->windowTitle(), QStringLiteral("title"));
    for (QWidget* w : root->findChildren<QWidget*>()) {
        if (!w->isVisibleTo(root)) continue;
        const QString where = QString::fromLatin1(w->metaObject()->className());
        if (auto* l = qobject_cast<QLabel*>(w)) add(l->text(), where);
        if (auto* b = qobject_cast<QAbstractButton*>(w)) add(b->text(), where);
        if (auto* g = qobject_cast<QGroupBox*>(w)) add(g->title(), where);
        if (auto* e = qobject_cast<QLineEdit*>(w)) add(e->placeholderText(), where);
        if (auto* e = qobject_cast<QPlainTextEdit*>(w)) add(e->placeholderText(), where);
        if (auto* c = qobject_cast<QComboBox*>(w)) {
            for (int i = 0; i < c->count(); ++i) add(c->itemText(i), where);
        }
        if (auto* t = qobject_cast<QTabWidget*>(w)) {
            for (int i = 0; i < t->count(); ++i) add(t->tabText(i), where);
        }
        if (auto* t = qobject_cast<QTableWidget*>(w)) {
            for (int i = 0; i < t->columnCount(); ++i)
                if (auto* h = t->horizontalHeaderItem(i)) add(h->text(), where);
        }
        add(w->toolTip(), where + QStringLiteral(" tooltip"));
    }
    for (QAction* a : root->findChildren<QAction*>()) {
        add(a->text(), QStringLiteral("action"));
        add(a->toolTip() == a->text().remove(QLatin1Char('&')) ? QString() : a->toolTip(), QStringLiteral("action tooltip"));
    }
    for (QMenu* m : root->findChildren<QMenu*>()) add(m->title(), QStringLiteral("menu"));
}

}  // namespace

class TestTranslation : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void noUntranslatedVisibleStrings();
    void switchesBackToEnglish();
};

void TestTranslation::initTestCase()
{
    ui::initResources();
    QCOMPARE(ui::installLanguage(QStringLiteral("zh_CN")), QStringLiteral("zh_CN"));
}

void TestTranslation::noUntranslatedVisibleStrings()
{
    test::AppHarness app(5);
    app.window->resize(1200, 800);
    app.window->show();
    QCoreApplication::processEvents();
    QStringList texts;
    collect(app.window.get(), texts);
    auto* batch = app.window->showBatchDialog();
    collect(batch, texts);
    auto* settings = app.window->showSettingsDialog();
    collect(settings, texts);
    ui::DownloadDialog download(*app.settings, QStringLiteral("/模型/混元"));  // a path is data: keep it free of Latin words
    download.show();
    collect(&download, texts);
    // Every preset panel state: each preset shows its own options and notices.
    for (const auto& p : app.window->presetPanel()->presets()) {
        app.window->presetPanel()->setCurrentPreset(QString::fromStdString(p.id));
        collect(app.window->presetPanel(), texts);
    }
    QVERIFY(texts.size() > 100);
    QStringList bad;
    for (const QString& t : texts) {
        const QString word = untranslatedPart(t.section(QStringLiteral(": "), 1));
        if (!word.isEmpty()) bad << t;
    }
    bad.removeDuplicates();
    QVERIFY2(bad.isEmpty(), qPrintable(QStringLiteral("untranslated:\n") + bad.join(QLatin1Char('\n'))));
    // Spot checks that the translation is the one we ship.
    QCOMPARE(app.window->actions().openFiles->text(), QStringLiteral("打开图片(&O)…"));
}

void TestTranslation::switchesBackToEnglish()
{
    test::AppHarness app(5);
    QCOMPARE(app.window->actions().openFiles->text(), QStringLiteral("打开图片(&O)…"));
    ui::installLanguage(QStringLiteral("en"));
    QCoreApplication::processEvents();
    QCOMPARE(app.window->actions().openFiles->text(), QStringLiteral("&Open Images…"));
}

QTEST_MAIN(TestTranslation)
#include "tst_translation.moc"
