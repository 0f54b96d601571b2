// DownloadDialog: the "Get HunyuanOCR…" window: target folder, per-file progress, Cancel, and on
// success the folder is stored as the HunyuanOCR folder. Drives a ModelDownloader. GUI thread only.
#pragma once

#include <QDialog>

class QLabel;
class QNetworkAccessManager;
class QProgressBar;
class QPushButton;

namespace lector::ui {

class ModelDownloader;
class Settings;

class DownloadDialog : public QDialog {
    Q_OBJECT
public:
    DownloadDialog(Settings& settings, const QString& targetDir, QWidget* parent = nullptr);
    ModelDownloader& downloader() { return *m_downloader; }
    void start();

Q_SIGNALS:
    void modelReady(const QString& dir);

private:
    Settings& m_settings;
    QString m_target;
    QNetworkAccessManager* m_network;
    ModelDownloader* m_downloader;
    QLabel* m_intro;
    QLabel* m_file;
    QProgressBar* m_bar;
    QLabel* m_state;
    QPushButton* m_start;
    QPushButton* m_cancel;
};

}  // namespace lector::ui
