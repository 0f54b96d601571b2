#include "ui/download_dialog.h"

#include <QDir>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QNetworkAccessManager>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include "ui/model_download.h"
#include "ui/settings.h"

namespace lector::ui {

DownloadDialog::DownloadDialog(Settings& settings, const QString& targetDir, QWidget* parent)
    : QDialog(parent), m_settings(settings), m_target(targetDir)
{
    setWindowTitle(tr("Get HunyuanOCR"));
    m_network = new QNetworkAccessManager(this);
    m_downloader = new ModelDownloader(*m_network, this);
    auto* layout = new QVBoxLayout(this);
    m_intro = new QLabel(tr("Downloads HunyuanOCR 1.0 (about 2 GB, from Hugging Face: tencent/HunyuanOCR, "
                            "folder v1.0) into:\n%1\nAn interrupted download continues where it stopped.")
                             .arg(QDir::toNativeSeparators(targetDir)),
                         this);
    m_intro->setWordWrap(true);
    m_file = new QLabel(this);
    m_bar = new QProgressBar(this);
    m_state = new QLabel(this);
    m_state->setWordWrap(true);
    layout->addWidget(m_intro);
    layout->addWidget(m_file);
    layout->addWidget(m_bar);
    layout->addWidget(m_state);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    m_start = new QPushButton(tr("Download"), this);
    m_cancel = new QPushButton(tr("Close"), this);
    buttons->addWidget(m_start);
    buttons->addWidget(m_cancel);
    layout->addLayout(buttons);

    connect(m_start, &QPushButton::clicked, this, &DownloadDialog::start);
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (m_downloader->isRunning()) m_downloader->cancel();
        else reject();
    });
    connect(m_downloader, &ModelDownloader::fileStarted, this, [this](const QString& name, int index, int count) {
        m_file->setText(tr("File %1 of at least %2: %3").arg(index + 1).arg(count).arg(name));
    });
    connect(m_downloader, &ModelDownloader::fileProgress, this, [this](const QString&, qint64 received, qint64 total) {
        const QLocale locale;
        if (total > 0) {
            m_bar->setRange(0, 1000);
            m_bar->setValue(static_cast<int>(received * 1000 / total));
            m_state->setText(tr("%1 of %2").arg(locale.formattedDataSize(received), locale.formattedDataSize(total)));
        } else {
            m_bar->setRange(0, 0);
            m_state->setText(locale.formattedDataSize(received));
        }
    });
    connect(m_downloader, &ModelDownloader::finished, this, [this](bool ok, const QString& message) {
        m_start->setEnabled(true);
        m_start->setText(ok ? tr("Download") : tr("Retry"));
        m_cancel->setText(tr("Close"));
        m_bar->setRange(0, 1000);
        if (ok) {
            m_bar->setValue(1000);
            m_state->setText(tr("Done. HunyuanOCR is ready in %1.").arg(QDir::toNativeSeparators(m_target)));
            m_settings.setValue(Settings::Key::HunyuanDir, m_target);
            Q_EMIT modelReady(m_target);
        } else {
            m_state->setText(tr("Stopped: %1").arg(message));
        }
    });
    resize(520, sizeHint().height());
}

void DownloadDialog::start()
{
    m_start->setEnabled(false);
    m_cancel->setText(tr("Cancel"));
    m_state->setText(tr("Connecting…"));
    m_downloader->download(m_target);
}

}  // namespace lector::ui
