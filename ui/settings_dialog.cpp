#include "ui/settings_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QEvent>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QStandardPaths>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/model_folder.h"
#include "ui/settings.h"

namespace lector::ui {

SettingsDialog::SettingsDialog(Settings& settings, const std::vector<doc::Preset>& presets, QWidget* parent)
    : QDialog(parent), m_settings(settings), m_presets(presets)
{
    setObjectName(QStringLiteral("SettingsDialog"));
    auto* layout = new QVBoxLayout(this);

    m_general = new QGroupBox(this);
    auto* general = new QFormLayout(m_general);
    m_language = new QComboBox(m_general);
    m_language->addItem(QString(), QStringLiteral("system"));
    m_language->addItem(QStringLiteral("English"), QStringLiteral("en"));
    m_language->addItem(QStringLiteral("简体中文"), QStringLiteral("zh_CN"));
    m_languageLabel = new QLabel(m_general);
    general->addRow(m_languageLabel, m_language);
    m_preset = new QComboBox(m_general);
    for (const auto& p : m_presets) m_preset->addItem(QString(), QString::fromStdString(p.id));
    m_presetLabel = new QLabel(m_general);
    general->addRow(m_presetLabel, m_preset);
    m_autoCopy = new QCheckBox(m_general);
    general->addRow(QString(), m_autoCopy);
    m_watch = new QCheckBox(m_general);
    general->addRow(QString(), m_watch);
    layout->addWidget(m_general);

    m_model = new QGroupBox(this);
    auto* model = new QFormLayout(m_model);
    m_folder = new QLineEdit(m_model);
    m_browse = new QToolButton(m_model);
    auto* folderRow = new QHBoxLayout;
    folderRow->addWidget(m_folder, 1);
    folderRow->addWidget(m_browse);
    m_folderLabel = new QLabel(m_model);
    model->addRow(m_folderLabel, folderRow);
    m_folderState = new QLabel(m_model);
    m_folderState->setWordWrap(true);
    m_download = new QPushButton(m_model);
    auto* stateRow = new QHBoxLayout;
    stateRow->addWidget(m_folderState, 1);
    stateRow->addWidget(m_download);
    model->addRow(QString(), stateRow);
    m_device = new QComboBox(m_model);
    m_device->addItem(QString(), QStringLiteral("cuda"));
    m_device->addItem(QString(), QStringLiteral("cpu"));
    m_deviceLabel = new QLabel(m_model);
    model->addRow(m_deviceLabel, m_device);
    m_dtype = new QComboBox(m_model);
    m_dtype->addItem(QString(), QStringLiteral("auto"));
    m_dtype->addItem(QStringLiteral("float16"), QStringLiteral("float16"));
    m_dtype->addItem(QStringLiteral("bfloat16"), QStringLiteral("bfloat16"));
    m_dtype->addItem(QStringLiteral("float32"), QStringLiteral("float32"));
    m_dtypeLabel = new QLabel(m_model);
    model->addRow(m_dtypeLabel, m_dtype);
    layout->addWidget(m_model);

    m_batch = new QGroupBox(this);
    auto* batch = new QFormLayout(m_batch);
    m_recursive = new QCheckBox(m_batch);
    batch->addRow(QString(), m_recursive);
    m_types = new QLineEdit(m_batch);
    m_typesLabel = new QLabel(m_batch);
    batch->addRow(m_typesLabel, m_types);
    m_format = new QComboBox(m_batch);
    for (const char* id : {"jsonl", "csv", "json", "txt"}) m_format->addItem(QString(), QString::fromLatin1(id));
    m_formatLabel = new QLabel(m_batch);
    batch->addRow(m_formatLabel, m_format);
    layout->addWidget(m_batch);

    m_restartNote = new QLabel(this);
    m_restartNote->setWordWrap(true);
    m_restartNote->setForegroundRole(QPalette::PlaceholderText);
    layout->addWidget(m_restartNote);
    layout->addStretch(1);

    m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    layout->addWidget(m_buttons);

    connect(m_buttons, &QDialogButtonBox::accepted, this, [this] {
        apply();
        accept();
    });
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_folder, &QLineEdit::textChanged, this, &SettingsDialog::validateFolder);
    connect(m_browse, &QToolButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("HunyuanOCR folder"), m_folder->text());
        if (!dir.isEmpty()) m_folder->setText(dir);
    });
    connect(m_download, &QPushButton::clicked, this, [this] {
        QString dir = m_folder->text().trimmed();
        if (dir.isEmpty())
            dir = QDir(QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation)).filePath(QStringLiteral("HunyuanOCR-1.0"));
        Q_EMIT downloadRequested(dir);
    });

    retranslate();
    load();
    resize(600, sizeHint().height());
}

void SettingsDialog::retranslate()
{
    setWindowTitle(tr("Settings"));
    m_general->setTitle(tr("General"));
    m_languageLabel->setText(tr("Language"));
    m_language->setItemText(0, tr("System default"));
    m_presetLabel->setText(tr("Default preset"));
    const std::string lang = QLocale().language() == QLocale::Chinese ? "zh" : "en";
    for (int i = 0; i < m_preset->count() && i < static_cast<int>(m_presets.size()); ++i)
        m_preset->setItemText(i, QString::fromStdString(m_presets[static_cast<size_t>(i)].name.in(lang)));
    m_autoCopy->setText(tr("Copy the recognised text to the clipboard automatically"));
    m_watch->setText(tr("Watch the clipboard and recognise new images at once"));
    m_model->setTitle(tr("HunyuanOCR (vision-language model)"));
    m_folderLabel->setText(tr("Model folder"));
    m_folder->setPlaceholderText(tr("Folder with config.json, model weights, tokenizer.json …"));
    m_browse->setText(tr("Browse…"));
    m_download->setText(tr("Get HunyuanOCR…"));
    m_deviceLabel->setText(tr("Device"));
    m_device->setItemText(0, tr("GPU (CUDA)"));
    m_device->setItemText(1, tr("CPU (slow)"));
    m_dtypeLabel->setText(tr("Number format"));
    m_dtype->setItemText(0, tr("Automatic (float16 on GPU, float32 on CPU)"));
    m_batch->setTitle(tr("Batch defaults"));
    m_recursive->setText(tr("Include subfolders"));
    m_typesLabel->setText(tr("File types"));
    m_formatLabel->setText(tr("Save as"));
    m_format->setItemText(0, tr("JSON Lines"));
    m_format->setItemText(1, tr("CSV"));
    m_format->setItemText(2, tr("JSON per image"));
    m_format->setItemText(3, tr("Text per image"));
    // Set here rather than left to Qt's own translations, which may not be installed.
    m_buttons->button(QDialogButtonBox::Ok)->setText(tr("OK"));
    m_buttons->button(QDialogButtonBox::Cancel)->setText(tr("Cancel"));
    m_restartNote->setText(tr("Model, device and number format changes apply when the model is next loaded."));
    validateFolder();
}

void SettingsDialog::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::LanguageChange) retranslate();
    QDialog::changeEvent(event);
}

void SettingsDialog::load()
{
    auto select = [](QComboBox* box, const QString& value) {
        const int idx = box->findData(value);
        if (idx >= 0) box->setCurrentIndex(idx);
    };
    select(m_language, m_settings.uiLanguage());
    select(m_preset, m_settings.defaultPreset());
    m_autoCopy->setChecked(m_settings.autoCopy());
    m_watch->setChecked(m_settings.watchClipboard());
    m_folder->setText(m_settings.hunyuanDir());
    select(m_device, m_settings.device());
    select(m_dtype, m_settings.dtype());
    m_recursive->setChecked(m_settings.batchRecursive());
    m_types->setText(m_settings.batchExtensions().join(QLatin1Char(' ')));
    select(m_format, m_settings.batchFormat());
    validateFolder();
}

void SettingsDialog::apply()
{
    m_settings.setValue(Settings::Key::UiLanguage, m_language->currentData());
    m_settings.setValue(Settings::Key::DefaultPreset, m_preset->currentData());
    m_settings.setValue(Settings::Key::AutoCopy, m_autoCopy->isChecked());
    m_settings.setValue(Settings::Key::WatchClipboard, m_watch->isChecked());
    m_settings.setValue(Settings::Key::HunyuanDir, m_folder->text().trimmed());
    m_settings.setValue(Settings::Key::Device, m_device->currentData());
    m_settings.setValue(Settings::Key::Dtype, m_dtype->currentData());
    m_settings.setValue(Settings::Key::BatchRecursive, m_recursive->isChecked());
    m_settings.setValue(Settings::Key::BatchExtensions, m_types->text().toLower().simplified());
    m_settings.setValue(Settings::Key::BatchFormat, m_format->currentData());
    m_settings.sync();
}

void SettingsDialog::setHunyuanDir(const QString& dir) { m_folder->setText(dir); }

QString SettingsDialog::hunyuanValidationText() const { return m_folderState->text(); }

void SettingsDialog::validateFolder()
{
    const QString dir = m_folder->text().trimmed();
    if (dir.isEmpty()) {
        m_hunyuanOk = false;
        m_folderState->setText(tr("Not set. PP-OCRv4 works without it; HunyuanOCR presets need it."));
        m_folderState->setStyleSheet(QString());
        return;
    }
    const ModelFolderCheck check = checkHunyuanFolder(dir);
    m_hunyuanOk = check.ok;
    m_folderState->setText(check.message);
    m_folderState->setStyleSheet(check.ok ? QStringLiteral("color: #1f7a3a;") : QStringLiteral("color: #b3261e;"));
}

}  // namespace lector::ui
