#include "ui/batch_dialog.h"

#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QRegularExpression>
#include <QPushButton>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include "core/doc/preset.h"
#include "ui/engine_bridge.h"
#include "ui/folder_scan.h"
#include "ui/settings.h"
#include "ui/model_choice.h"
#include "ui/status_line.h"

namespace lector::ui {
namespace {

QHBoxLayout* pathRow(QLineEdit* edit, QToolButton* browse)
{
    auto* row = new QHBoxLayout;
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(edit, 1);
    row->addWidget(browse);
    return row;
}

}  // namespace

BatchDialog::BatchDialog(EngineBridge& bridge, Settings& settings, RequestTemplate requestTemplate, QWidget* parent)
    : QDialog(parent), m_bridge(bridge), m_settings(settings), m_template(std::move(requestTemplate))
{
    setObjectName(QStringLiteral("BatchDialog"));
    auto* layout = new QVBoxLayout(this);

    m_optionsBox = new QGroupBox(this);
    auto* form = new QFormLayout(m_optionsBox);
    m_source = new QLineEdit(m_optionsBox);
    m_sourceBrowse = new QToolButton(m_optionsBox);
    m_sourceLabel = new QLabel(m_optionsBox);
    form->addRow(m_sourceLabel, pathRow(m_source, m_sourceBrowse));
    m_recursive = new QCheckBox(m_optionsBox);
    form->addRow(QString(), m_recursive);
    m_types = new QLineEdit(m_optionsBox);
    m_typesLabel = new QLabel(m_optionsBox);
    form->addRow(m_typesLabel, m_types);
    m_format = new QComboBox(m_optionsBox);
    for (BatchFormat f : {BatchFormat::JsonLines, BatchFormat::Csv, BatchFormat::JsonPerImage, BatchFormat::TextPerImage})
        m_format->addItem(QString(), batchFormatId(f));
    m_formatLabel = new QLabel(m_optionsBox);
    form->addRow(m_formatLabel, m_format);
    m_output = new QLineEdit(m_optionsBox);
    m_outputBrowse = new QToolButton(m_optionsBox);
    m_outputLabel = new QLabel(m_optionsBox);
    form->addRow(m_outputLabel, pathRow(m_output, m_outputBrowse));
    m_mirror = new QCheckBox(m_optionsBox);
    form->addRow(QString(), m_mirror);
    m_presetNote = new QLabel(m_optionsBox);
    m_presetNote->setWordWrap(true);
    form->addRow(QString(), m_presetNote);
    m_resumeNote = new QLabel(m_optionsBox);
    m_resumeNote->setWordWrap(true);
    m_resumeNote->setStyleSheet(QStringLiteral("QLabel { background: #e8f1ff; color: #123a73; border-radius: 4px; padding: 6px; }"));
    m_resumeNote->setVisible(false);
    form->addRow(m_resumeNote);
    layout->addWidget(m_optionsBox);

    m_progressBox = new QGroupBox(this);
    auto* prog = new QVBoxLayout(m_progressBox);
    m_bar = new QProgressBar(m_progressBox);
    m_bar->setRange(0, 1);
    m_bar->setValue(0);
    m_stats = new QLabel(m_progressBox);
    m_current = new QLabel(m_progressBox);
    m_current->setTextFormat(Qt::PlainText);
    m_current->setForegroundRole(QPalette::PlaceholderText);
    m_failuresLabel = new QLabel(m_progressBox);
    m_failures = new QListWidget(m_progressBox);
    m_failures->setMinimumHeight(80);
    prog->addWidget(m_bar);
    prog->addWidget(m_stats);
    prog->addWidget(m_current);
    prog->addWidget(m_failuresLabel);
    prog->addWidget(m_failures, 1);
    prog->addStretch(0);
    layout->addWidget(m_progressBox, 1);

    auto* buttons = new QHBoxLayout;
    m_openOutput = new QPushButton(this);
    m_start = new QPushButton(this);
    m_start->setDefault(true);
    m_pause = new QPushButton(this);
    m_cancel = new QPushButton(this);
    m_close = new QPushButton(this);
    buttons->addWidget(m_openOutput);
    buttons->addStretch(1);
    buttons->addWidget(m_start);
    buttons->addWidget(m_pause);
    buttons->addWidget(m_cancel);
    buttons->addWidget(m_close);
    layout->addLayout(buttons);

    connect(m_sourceBrowse, &QToolButton::clicked, this, &BatchDialog::browseSource);
    connect(m_outputBrowse, &QToolButton::clicked, this, &BatchDialog::browseOutput);
    connect(m_output, &QLineEdit::textChanged, this, &BatchDialog::checkExistingOutput);
    connect(m_format, &QComboBox::currentIndexChanged, this, [this] {
        updateButtons();
        checkExistingOutput();
    });
    connect(m_source, &QLineEdit::textChanged, this, &BatchDialog::updateButtons);
    connect(m_start, &QPushButton::clicked, this, &BatchDialog::startBatch);
    connect(m_pause, &QPushButton::clicked, this, &BatchDialog::pauseOrResume);
    connect(m_cancel, &QPushButton::clicked, this, &BatchDialog::cancelBatch);
    connect(m_close, &QPushButton::clicked, this, &BatchDialog::close);
    connect(m_openOutput, &QPushButton::clicked, this, [this] {
        QDesktopServices::openUrl(QUrl::fromLocalFile(m_output->text()));
    });

    retranslate();
    loadDefaults();
    updateButtons();
    resize(620, 600);
}

BatchDialog::~BatchDialog() = default;

void BatchDialog::retranslate()
{
    setWindowTitle(tr("Batch OCR"));
    m_optionsBox->setTitle(tr("Folder"));
    m_sourceLabel->setText(tr("Images in"));
    m_sourceBrowse->setText(tr("Browse…"));
    m_recursive->setText(tr("Include subfolders"));
    m_typesLabel->setText(tr("File types"));
    m_types->setToolTip(tr("Extensions separated by spaces"));
    m_formatLabel->setText(tr("Save as"));
    m_format->setItemText(0, tr("JSON Lines (one file)"));
    m_format->setItemText(1, tr("CSV (one file, one row per line of text)"));
    m_format->setItemText(2, tr("JSON (one file per image)"));
    m_format->setItemText(3, tr("Text (one file per image)"));
    m_outputLabel->setText(tr("Output folder"));
    m_outputBrowse->setText(tr("Browse…"));
    m_mirror->setText(tr("Mirror the source folder tree"));
    m_progressBox->setTitle(tr("Progress"));
    m_failuresLabel->setText(tr("Failed images"));
    m_openOutput->setText(tr("Open output folder"));
    m_start->setText(tr("Start"));
    m_cancel->setText(tr("Cancel batch"));
    m_close->setText(tr("Close"));
    m_presetNote->setText(presetNote());
    updateButtons();
    if (m_job) onProgress(m_job->progress());
    else m_stats->setText(tr("Not started."));
}

QString BatchDialog::presetNote() const
{
    QString preset = m_presetName;
    if (preset.isEmpty() && m_template) preset = QString::fromStdString(m_template().preset);
    return tr("Preset: %1 · Model: %2").arg(preset, describeEngine(m_bridge.info()));
}

void BatchDialog::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::LanguageChange) retranslate();
    QDialog::changeEvent(event);
}

void BatchDialog::loadDefaults()
{
    m_source->setText(m_settings.value(Settings::Key::BatchSourceDir).toString());
    m_output->setText(m_settings.value(Settings::Key::BatchOutputDir).toString());
    m_recursive->setChecked(m_settings.batchRecursive());
    m_types->setText(m_settings.batchExtensions().join(QLatin1Char(' ')));
    m_mirror->setChecked(m_settings.batchMirrorTree());
    const int idx = m_format->findData(m_settings.batchFormat());
    m_format->setCurrentIndex(idx >= 0 ? idx : 0);
}

void BatchDialog::storeDefaults()
{
    m_settings.setValue(Settings::Key::BatchSourceDir, m_source->text());
    m_settings.setValue(Settings::Key::BatchOutputDir, m_output->text());
    m_settings.setValue(Settings::Key::BatchRecursive, m_recursive->isChecked());
    m_settings.setValue(Settings::Key::BatchExtensions, m_types->text().toLower().simplified());
    m_settings.setValue(Settings::Key::BatchMirrorTree, m_mirror->isChecked());
    m_settings.setValue(Settings::Key::BatchFormat, m_format->currentData().toString());
}

void BatchDialog::setPresetName(const QString& name)
{
    m_presetName = name;
    m_presetNote->setText(presetNote());
}

void BatchDialog::setSourceDir(const QString& dir) { m_source->setText(dir); }
void BatchDialog::setOutputDir(const QString& dir) { m_output->setText(dir); }

BatchOptions BatchDialog::options() const
{
    BatchOptions o;
    o.sourceDir = m_source->text().trimmed();
    o.recursive = m_recursive->isChecked();
    for (const QString& e : m_types->text().toLower().split(QRegularExpression(QStringLiteral("[\\s,;.*]+")), Qt::SkipEmptyParts))
        o.extensions << e;
    if (o.extensions.isEmpty()) o.extensions = defaultImageExtensions();
    o.format = batchFormatFromId(m_format->currentData().toString()).value_or(BatchFormat::JsonLines);
    o.outputDir = m_output->text().trimmed();
    o.mirrorTree = m_mirror->isChecked();
    o.resume = true;
    if (m_template) o.requestTemplate = m_template();
    return o;
}

void BatchDialog::browseSource()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder with images"), m_source->text());
    if (dir.isEmpty()) return;
    m_source->setText(dir);
    if (m_output->text().isEmpty()) m_output->setText(QDir(dir).filePath(QStringLiteral("lector-output")));
}

void BatchDialog::browseOutput()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Output folder"), m_output->text());
    if (!dir.isEmpty()) m_output->setText(dir);
}

void BatchDialog::checkExistingOutput()
{
    const auto manifest = BatchJob::readManifest(m_output->text().trimmed());
    m_resumeNote->setVisible(manifest.has_value() && !m_job);
    if (manifest)
        m_resumeNote->setText(tr("This folder holds an unfinished batch of %1. Start continues it: images "
                                 "already saved are skipped.")
                                  .arg(QDir::toNativeSeparators(manifest->sourceDir)));
}

void BatchDialog::startBatch()
{
    if (m_job && m_job->state() != BatchJob::State::Finished) return;
    BatchOptions o = options();
    if (o.sourceDir.isEmpty() || !QFileInfo(o.sourceDir).isDir()) {
        m_stats->setText(tr("Choose a folder with images."));
        return;
    }
    if (o.outputDir.isEmpty()) {
        o.outputDir = QDir(o.sourceDir).filePath(QStringLiteral("lector-output"));
        m_output->setText(o.outputDir);
    }
    storeDefaults();
    m_failures->clear();
    m_resumeNote->setVisible(false);
    m_job = std::make_unique<BatchJob>(m_bridge, o);
    connect(m_job.get(), &BatchJob::progressChanged, this, &BatchDialog::onProgress);
    connect(m_job.get(), &BatchJob::finished, this, &BatchDialog::onFinished);
    connect(m_job.get(), &BatchJob::stateChanged, this, &BatchDialog::updateButtons);
    connect(m_job.get(), &BatchJob::imageFailed, this, [this](const QString& image, const QString& message) {
        m_failures->addItem(QStringLiteral("%1 — %2").arg(image, message));
    });
    m_stats->setText(tr("Looking for images…"));
    m_job->start();
    updateButtons();
}

void BatchDialog::pauseOrResume()
{
    if (!m_job) return;
    if (m_job->state() == BatchJob::State::Paused) m_job->resume();
    else m_job->pause();
    updateButtons();
}

void BatchDialog::cancelBatch()
{
    if (m_job) m_job->cancel();
    updateButtons();
}

void BatchDialog::updateButtons()
{
    using S = BatchJob::State;
    const S state = m_job ? m_job->state() : S::Idle;
    const bool active = state == S::Scanning || state == S::Running || state == S::Paused || state == S::Cancelling;
    m_optionsBox->setEnabled(!active);
    m_start->setEnabled(!active && m_bridge.isLoaded() && !m_source->text().trimmed().isEmpty());
    m_start->setText(m_job && state == S::Finished ? tr("Start again") : tr("Start"));
    m_pause->setEnabled(state == S::Running || state == S::Paused || state == S::Scanning);
    m_pause->setText(state == S::Paused ? tr("Resume") : tr("Pause"));
    m_cancel->setEnabled(active && state != S::Cancelling);
    const auto fmt = batchFormatFromId(m_format->currentData().toString());
    m_mirror->setEnabled(fmt == BatchFormat::JsonPerImage || fmt == BatchFormat::TextPerImage);
    const bool anyFailures = m_failures->count() > 0;
    m_failuresLabel->setVisible(anyFailures);
    m_failures->setVisible(anyFailures);
}

void BatchDialog::onProgress(const BatchProgress& p)
{
    m_bar->setRange(0, std::max(1, p.total));
    m_bar->setValue(p.done);
    QString stats = tr("%1 of %2 images").arg(p.done).arg(p.total);
    if (p.skipped > 0) stats += tr(" · %1 already done").arg(p.skipped);
    if (p.failed > 0) stats += tr(" · %1 failed").arg(p.failed);
    if (p.imagesPerSecond > 0) stats += tr(" · %1 images/s").arg(p.imagesPerSecond, 0, 'f', 2);
    if (m_job && m_job->state() == BatchJob::State::Paused) stats += tr(" · paused");
    else if (p.etaSeconds >= 0 && p.done < p.total) stats += tr(" · ETA %1").arg(formatEta(p.etaSeconds));
    m_stats->setText(stats);
    m_current->setText(p.current);
    Q_EMIT progressChanged(p);
}

void BatchDialog::onFinished(const BatchSummary& s)
{
    for (const BatchFailure& f : s.failures) {
        const QString line = QStringLiteral("%1 — %2").arg(f.image, f.message);
        if (m_failures->findItems(line, Qt::MatchExactly).isEmpty()) m_failures->addItem(line);
    }
    QString text;
    if (!s.fatalError.isEmpty()) text = tr("Stopped: %1").arg(s.fatalError);
    else if (s.cancelled) text = tr("Cancelled after %1 images. Start again to continue where it stopped.").arg(s.processed);
    else
        text = tr("Finished: %1 images in %2 (%3 skipped, %4 failed).")
                   .arg(s.processed)
                   .arg(formatEta(s.seconds))
                   .arg(s.skipped)
                   .arg(s.failures.size());
    m_stats->setText(text);
    m_current->setText(QDir::toNativeSeparators(s.output));
    updateButtons();
    Q_EMIT batchFinished(s);
}

void BatchDialog::closeEvent(QCloseEvent* event)
{
    // Closing hides the dialog; a running batch goes on (the status bar shows it).
    QDialog::closeEvent(event);
}

}  // namespace lector::ui
