#include "ui/model_download.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QRegularExpression>
#include <QSet>

#include <QCoroSignal>

#include "ui/model_folder.h"

namespace lector::ui {
namespace {

QNetworkRequest makeRequest(const QUrl& url)
{
    QNetworkRequest req(url);
    // Hugging Face answers /resolve/ with a redirect to its CDN.
    req.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::NoLessSafeRedirectPolicy);
    req.setHeader(QNetworkRequest::UserAgentHeader, QStringLiteral("Lector/0.1"));
    return req;
}

// "bytes 100-199/1000" -> (100, 1000); "bytes */1000" -> (-1, 1000).
std::pair<qint64, qint64> parseContentRange(const QByteArray& header)
{
    static const QRegularExpression re(QStringLiteral("^bytes\\s+(?:(\\d+)-\\d+|\\*)/(\\d+|\\*)"));
    const auto m = re.match(QString::fromLatin1(header));
    if (!m.hasMatch()) return {-1, -1};
    const qint64 start = m.captured(1).isEmpty() ? -1 : m.captured(1).toLongLong();
    const qint64 total = m.captured(2) == QLatin1String("*") ? -1 : m.captured(2).toLongLong();
    return {start, total};
}

QStringList shardsOfIndex(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    const QJsonObject map = QJsonDocument::fromJson(f.readAll()).object().value(QLatin1String("weight_map")).toObject();
    QSet<QString> seen;
    QStringList shards;
    for (auto it = map.begin(); it != map.end(); ++it) {
        const QString s = it.value().toString();
        // Names only: a hostile index must not write outside the target folder.
        if (s.isEmpty() || s.contains(QLatin1Char('/')) || s.contains(QLatin1Char('\\')) || s.startsWith(QLatin1Char('.')))
            continue;
        if (!seen.contains(s)) {
            seen.insert(s);
            shards << s;
        }
    }
    shards.sort();
    return shards;
}

}  // namespace

QUrl ModelDownloader::defaultBaseUrl()
{
    return QUrl(QStringLiteral("https://huggingface.co/tencent/HunyuanOCR/resolve/main/v1.0/"));
}

ModelDownloader::ModelDownloader(QNetworkAccessManager& network, QObject* parent)
    : QObject(parent), m_network(network), m_base(defaultBaseUrl())
{
}

void ModelDownloader::cancel()
{
    m_cancelled = true;
    if (m_reply) m_reply->abort();
}

QCoro::Task<Result<void>> ModelDownloader::download(QString targetDir)
{
    if (m_running) co_return makeError("busy", "a download is already running");
    m_running = true;
    m_cancelled = false;
    QPointer<ModelDownloader> self(this);
    Result<void> result;
    if (!QDir().mkpath(targetDir)) {
        result = makeError("write_failed", QStringLiteral("cannot create %1").arg(targetDir).toStdString());
    } else {
        // The index comes first: it names the weight shards.
        QStringList files = hunyuanBaseFiles();
        files.removeAll(QStringLiteral("model.safetensors.index.json"));
        files.prepend(QStringLiteral("model.safetensors.index.json"));
        for (int i = 0; i < files.size() && result.ok(); ++i) {
            Q_EMIT fileStarted(files[i], i, static_cast<int>(files.size()));
            result = co_await fetch(files[i], targetDir);
            if (!self) co_return makeError("cancelled", "downloader destroyed");
            if (result.ok() && i == 0) {
                const QStringList shards = shardsOfIndex(QDir(targetDir).filePath(files[0]));
                if (shards.isEmpty()) result = makeError("bad_index", "model.safetensors.index.json names no weight file");
                files.append(shards);
            }
        }
    }
    m_running = false;
    Q_EMIT finished(result.ok(), result.ok() ? QString() : QString::fromStdString(result.error().message));
    co_return result;
}

QCoro::Task<qint64> ModelDownloader::remoteSize(QString name)
{
    QNetworkReply* reply = m_network.head(makeRequest(m_base.resolved(QUrl(name))));
    m_reply = reply;
    co_await qCoro(reply, &QNetworkReply::finished);
    reply->deleteLater();
    if (reply->error() != QNetworkReply::NoError) co_return -1;
    // Hugging Face gives an LFS file's size in X-Linked-Size when it redirects.
    const QByteArray linked = reply->rawHeader("X-Linked-Size");
    if (!linked.isEmpty()) co_return linked.toLongLong();
    const QVariant len = reply->header(QNetworkRequest::ContentLengthHeader);
    co_return len.isValid() ? len.toLongLong() : -1;
}

QCoro::Task<Result<void>> ModelDownloader::fetch(QString name, QString targetDir)
{
    const QString finalPath = QDir(targetDir).filePath(name);
    const QString partPath = finalPath + QStringLiteral(".part");
    if (QFileInfo::exists(finalPath)) {
        const qint64 remote = co_await remoteSize(name);
        const qint64 local = QFileInfo(finalPath).size();
        if (remote < 0 || remote == local) {  // unverifiable offline: keep what is there
            Q_EMIT fileSkipped(name);
            Q_EMIT fileProgress(name, local, local);
            co_return Result<void>();
        }
        QFile::remove(finalPath);
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (m_cancelled) co_return makeError("cancelled", "download cancelled");
        QFile part(partPath);
        if (!part.open(QIODevice::ReadWrite | QIODevice::Append))
            co_return makeError("write_failed", (partPath + QStringLiteral(": ") + part.errorString()).toStdString());
        const qint64 offset = part.size();
        QNetworkRequest req = makeRequest(m_base.resolved(QUrl(name)));
        if (offset > 0) req.setRawHeader("Range", "bytes=" + QByteArray::number(offset) + '-');
        QNetworkReply* reply = m_network.get(req);
        m_reply = reply;
        qint64 total = -1;
        bool checked = false;
        bool restart = false;    // the server's range does not fit the part file: start over
        bool complete = false;   // 416 for exactly the part's size: nothing left to fetch
        QString writeError;
        auto checkHeaders = [&] {
            if (checked) return;
            checked = true;
            const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
            const auto [start, rangeTotal] = parseContentRange(reply->rawHeader("Content-Range"));
            if (status == 206) {
                total = rangeTotal;
                if (start != offset) restart = true;
            } else if (status == 416) {
                if (rangeTotal == offset) complete = true;
                else restart = true;
            } else if (status == 200) {
                part.resize(0);  // the server ignored the range: whole file again
                const QVariant len = reply->header(QNetworkRequest::ContentLengthHeader);
                total = len.isValid() ? len.toLongLong() : -1;
            }
            if (restart) reply->abort();
        };
        connect(reply, &QNetworkReply::readyRead, this, [&] {
            checkHeaders();
            if (restart) return;
            const QByteArray chunk = reply->readAll();
            if (part.write(chunk) != chunk.size()) {
                writeError = part.errorString();
                reply->abort();
                return;
            }
            Q_EMIT fileProgress(name, part.size(), total);
        });
        co_await qCoro(reply, &QNetworkReply::finished);
        checkHeaders();
        reply->disconnect(this);
        reply->deleteLater();
        part.flush();
        const qint64 got = part.size();
        part.close();
        if (!writeError.isEmpty())
            co_return makeError("write_failed", (partPath + QStringLiteral(": ") + writeError).toStdString());
        if (m_cancelled) co_return makeError("cancelled", "download cancelled");
        if (restart) {
            QFile::remove(partPath);
            continue;
        }
        if (!complete && reply->error() != QNetworkReply::NoError)
            co_return makeError("network_error", (name + QStringLiteral(": ") + reply->errorString()).toStdString());
        if (complete) total = got;
        if (total >= 0 && got != total) {
            if (got > total) QFile::remove(partPath);
            co_return makeError("size_mismatch", QStringLiteral("%1: expected %2 bytes, received %3")
                                                     .arg(name).arg(total).arg(got).toStdString());
        }
        QFile::remove(finalPath);
        if (!QFile::rename(partPath, finalPath))
            co_return makeError("write_failed", (finalPath + QStringLiteral(": cannot rename the finished download")).toStdString());
        Q_EMIT fileProgress(name, got, got);
        co_return Result<void>();
    }
    co_return makeError("network_error", (name + QStringLiteral(": the server's byte ranges do not match the partial file")).toStdString());
}

}  // namespace lector::ui
