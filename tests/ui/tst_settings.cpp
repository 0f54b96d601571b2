// Settings: typed values persist across restarts (a new Settings over the same file), the validators
// turn bad stored values into defaults, and the HunyuanOCR folder check names the missing file.
#include <QCheckBox>
#include <QFile>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>

#include "ui/model_folder.h"
#include "ui/settings.h"
#include "ui/settings_dialog.h"
#include "ui_test_support.h"

using lector::ui::Settings;

class TestSettings : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void defaultsWhenEmpty();
    void persistsAcrossRestarts();
    void rejectsInvalidValues();
    void badStoredValueFallsBackToDefault();
    void recentFilesAreCappedAndDeduplicated();
    void dialogAppliesAndPersists();
    void hunyuanFolderNamesMissingFile_data();
    void hunyuanFolderNamesMissingFile();
};

void TestSettings::defaultsWhenEmpty()
{
    QTemporaryDir dir;
    auto s = lector::test::tempSettings(dir);
    QCOMPARE(s->model(), QStringLiteral("ppocr-v4"));
    QCOMPARE(s->device(), QStringLiteral("cpu"));
    QCOMPARE(s->dtype(), QStringLiteral("auto"));
    QCOMPARE(s->defaultPreset(), QStringLiteral("text"));
    QCOMPARE(s->uiLanguage(), QStringLiteral("system"));
    QCOMPARE(s->autoCopy(), false);
    QCOMPARE(s->showOverlay(), true);
    QCOMPARE(s->batchFormat(), QStringLiteral("jsonl"));
    QVERIFY(s->batchExtensions().contains(QStringLiteral("png")));
}

void TestSettings::persistsAcrossRestarts()
{
    QTemporaryDir dir;
    {
        auto s = lector::test::tempSettings(dir);
        QVERIFY(s->setValue(Settings::Key::Model, QStringLiteral("hunyuan-ocr")));
        QVERIFY(s->setValue(Settings::Key::Device, QStringLiteral("cuda")));
        QVERIFY(s->setValue(Settings::Key::Dtype, QStringLiteral("bfloat16")));
        QVERIFY(s->setValue(Settings::Key::HunyuanDir, QStringLiteral("/models/hy")));
        QVERIFY(s->setValue(Settings::Key::DefaultPreset, QStringLiteral("invoice")));
        QVERIFY(s->setValue(Settings::Key::UiLanguage, QStringLiteral("zh_CN")));
        QVERIFY(s->setValue(Settings::Key::AutoCopy, true));
        QVERIFY(s->setValue(Settings::Key::ShowOverlay, false));
        QVERIFY(s->setValue(Settings::Key::BatchFormat, QStringLiteral("csv")));
        QVERIFY(s->setValue(Settings::Key::BatchExtensions, QStringLiteral("png jpg")));
    }  // destroyed = application closed
    auto s = lector::test::tempSettings(dir);
    QCOMPARE(s->model(), QStringLiteral("hunyuan-ocr"));
    QCOMPARE(s->device(), QStringLiteral("cuda"));
    QCOMPARE(s->dtype(), QStringLiteral("bfloat16"));
    QCOMPARE(s->hunyuanDir(), QStringLiteral("/models/hy"));
    QCOMPARE(s->defaultPreset(), QStringLiteral("invoice"));
    QCOMPARE(s->uiLanguage(), QStringLiteral("zh_CN"));
    QCOMPARE(s->autoCopy(), true);
    QCOMPARE(s->showOverlay(), false);
    QCOMPARE(s->batchFormat(), QStringLiteral("csv"));
    QCOMPARE(s->batchExtensions(), QStringList({QStringLiteral("png"), QStringLiteral("jpg")}));
}

void TestSettings::rejectsInvalidValues()
{
    QTemporaryDir dir;
    auto s = lector::test::tempSettings(dir);
    QVERIFY(!s->setValue(Settings::Key::Device, QStringLiteral("tpu")));
    QVERIFY(!s->setValue(Settings::Key::Dtype, QStringLiteral("int4")));
    QVERIFY(!s->setValue(Settings::Key::UiLanguage, QStringLiteral("fr")));
    QVERIFY(!s->setValue(Settings::Key::BatchFormat, QStringLiteral("xlsx")));
    QVERIFY(!s->setValue(Settings::Key::DefaultPreset, QStringLiteral("../etc")));
    QVERIFY(!s->setValue(Settings::Key::BatchExtensions, QStringLiteral("*.png;")));
    QCOMPARE(s->device(), QStringLiteral("cpu"));
    QCOMPARE(s->batchFormat(), QStringLiteral("jsonl"));
}

void TestSettings::badStoredValueFallsBackToDefault()
{
    QTemporaryDir dir;
    {
        QSettings raw(dir.filePath(QStringLiteral("lector.ini")), QSettings::IniFormat);
        raw.setValue(Settings::storageName(Settings::Key::Device), QStringLiteral("quantum"));
        raw.setValue(Settings::storageName(Settings::Key::AutoCopy), QStringLiteral("maybe"));
        raw.setValue(Settings::storageName(Settings::Key::WatchClipboard), QStringLiteral("true"));
    }
    auto s = lector::test::tempSettings(dir);
    QCOMPARE(s->device(), QStringLiteral("cpu"));
    QCOMPARE(s->autoCopy(), false);
    QCOMPARE(s->watchClipboard(), true);  // INI gives strings for booleans: still read right
}

void TestSettings::recentFilesAreCappedAndDeduplicated()
{
    QTemporaryDir dir;
    auto s = lector::test::tempSettings(dir);
    for (int i = 0; i < 15; ++i) s->addRecentFile(QStringLiteral("/img/%1.png").arg(i));
    s->addRecentFile(QStringLiteral("/img/7.png"));
    const QStringList recent = s->recentFiles();
    QCOMPARE(recent.size(), Settings::kMaxRecentFiles);
    QCOMPARE(recent.first(), QStringLiteral("/img/7.png"));
    QCOMPARE(recent.count(QStringLiteral("/img/7.png")), 1);
    QCOMPARE(recent.at(1), QStringLiteral("/img/14.png"));
}

void TestSettings::dialogAppliesAndPersists()
{
    QTemporaryDir dir;
    const auto presets = lector::test::testPresets();
    QVERIFY(!presets.empty());
    {
        auto s = lector::test::tempSettings(dir);
        lector::ui::SettingsDialog dialog(*s, presets);
        auto* autoCopy = dialog.findChildren<QCheckBox*>().at(0);
        autoCopy->setChecked(true);
        dialog.setHunyuanDir(dir.path());
        dialog.apply();
    }
    auto s = lector::test::tempSettings(dir);
    QCOMPARE(s->autoCopy(), true);
    QCOMPARE(s->hunyuanDir(), dir.path());
}

void TestSettings::hunyuanFolderNamesMissingFile_data()
{
    QTest::addColumn<QStringList>("files");
    QTest::addColumn<QString>("missing");
    QTest::newRow("empty folder") << QStringList{} << QStringLiteral("config.json");
    QTest::newRow("no weights") << QStringList{QStringLiteral("config.json")} << QStringLiteral("model.safetensors.index.json");
    QTest::newRow("shard missing") << QStringList{QStringLiteral("config.json"), QStringLiteral("model.safetensors.index.json"),
                                                  QStringLiteral("model-00001-of-00002.safetensors")}
                                   << QStringLiteral("model-00002-of-00002.safetensors");
    QTest::newRow("no tokenizer") << QStringList{QStringLiteral("config.json"), QStringLiteral("model.safetensors")}
                                  << QStringLiteral("tokenizer.json");
    QTest::newRow("no preprocessor") << QStringList{QStringLiteral("config.json"), QStringLiteral("model.safetensors"),
                                                    QStringLiteral("tokenizer.json")}
                                     << QStringLiteral("preprocessor_config.json");
    QTest::newRow("complete") << QStringList{QStringLiteral("config.json"), QStringLiteral("model.safetensors.index.json"),
                                             QStringLiteral("model-00001-of-00002.safetensors"),
                                             QStringLiteral("model-00002-of-00002.safetensors"), QStringLiteral("tokenizer.json"),
                                             QStringLiteral("preprocessor_config.json")}
                              << QString();
}

void TestSettings::hunyuanFolderNamesMissingFile()
{
    QFETCH(QStringList, files);
    QFETCH(QString, missing);
    QTemporaryDir dir;
    for (const QString& f : files) {
        QFile file(dir.filePath(f));
        QVERIFY(file.open(QIODevice::WriteOnly));
        if (f == QLatin1String("model.safetensors.index.json"))
            file.write(R"({"metadata":{},"weight_map":{"a.weight":"model-00001-of-00002.safetensors",)"
                       R"("b.weight":"model-00002-of-00002.safetensors","c.weight":"model-00001-of-00002.safetensors"}})");
        else
            file.write("{}");
    }
    const auto check = lector::ui::checkHunyuanFolder(dir.path());
    QCOMPARE(check.ok, missing.isEmpty());
    QCOMPARE(check.missingFile, missing);
    if (!missing.isEmpty()) QVERIFY2(check.message.contains(missing), qPrintable(check.message));

    // The settings dialog shows the same verdict as the user types the folder.
    QTemporaryDir settingsDir;
    auto s = lector::test::tempSettings(settingsDir);
    const auto presets = lector::test::testPresets();
    lector::ui::SettingsDialog dialog(*s, presets);
    dialog.setHunyuanDir(dir.path());
    QCOMPARE(dialog.hunyuanFolderValid(), missing.isEmpty());
    if (!missing.isEmpty()) QVERIFY(dialog.hunyuanValidationText().contains(missing));
}

QTEST_MAIN(TestSettings)
#include "tst_settings.moc"
