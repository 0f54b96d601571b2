// ModelDownloader: "Get HunyuanOCR…" — fetches the v1.0/ files of tencent/HunyuanOCR (config,
// tokenizer, preprocessor, the weight index and every shard it names) into a folder with progress.
// Each file goes to <name>.part first and is renamed only when its size matches what the server
// announced (Content-Length / Content-Range); an interrupted download resumes with an HTTP Range
// request; files already complete are checked against the server's size and skipped. GUI thread
// only: all network I/O is asynchronous (QNetworkAccessManager), awaited with QCoro.
#pragma once

#include <QObject>
#include <QPointer>
#include <QStringList>
#include <QUrl>

#include <QCoroTask>

#include "core/common/result.h"

class QFile;
class QNetworkAccessManager;
class QNetworkReply;

namespace lector::ui {

class ModelDownloader : public QObject {
    Q_OBJECT
public:
    static QUrl defaultBaseUrl();  // https://huggingface.co/tencent/HunyuanOCR/resolve/main/v1.0/

    explicit ModelDownloader(QNetworkAccessManager& network, QObject* parent = nullptr);

    void setBaseUrl(const QUrl& url) { m_base = url; }
    QUrl baseUrl() const { return m_base; }

    // Downloads every file into targetDir (created). Errors: "network_error" (names the file and
    // Qt's reason), "size_mismatch" (names the file, expected and received sizes), "write_failed",
    // "cancelled", "bad_index" (the weight index names no shard).
    QCoro::Task<Result<void>> download(QString targetDir);
    void cancel();
    bool isRunning() const { return m_running; }

Q_SIGNALS:
    void fileStarted(const QString& name, int index, int count);
    void fileProgress(const QString& name, qint64 received, qint64 total);   // total -1: unknown
    void fileSkipped(const QString& name);                                    // already complete
    void finished(bool ok, const QString& message);

private:
    QCoro::Task<Result<void>> fetch(QString name, QString targetDir);
    QCoro::Task<qint64> remoteSize(QString name);   // -1 when unknown

    QNetworkAccessManager& m_network;
    QUrl m_base;
    QPointer<QNetworkReply> m_reply;
    bool m_cancelled = false;
    bool m_running = false;
};

}  // namespace lector::ui
