// "Get HunyuanOCR…" against a local HTTP server on 127.0.0.1 (never the network): every v1.0 file and
// every shard the index names arrives byte-exact; an interrupted transfer resumes with a Range request;
// a size that does not match the server's is reported, not kept; complete files are only re-checked;
// a server that ignores Range still yields the right file.
#include <QCoroTask>
#include <QDir>
#include <QFile>
#include <QNetworkAccessManager>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include "ui/model_download.h"
#include "ui/model_folder.h"

using lector::ui::ModelDownloader;

namespace {

// A tiny HTTP/1.1 file server: HEAD and GET with "Range: bytes=N-", one request per connection.
class FileServer : public QObject {
public:
    QMap<QString, QByteArray> files;
    QMap<QString, qint64> cutAfter;     // first GET of this file: send this many body bytes, then drop
    QMap<QString, qint64> claimTotal;   // announce this total size instead of the real one
    bool ignoreRange = false;
    QStringList log;                    // "GET name range" / "HEAD name"

    FileServer()
    {
        QObject::connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket* s = m_server.nextPendingConnection()) {
                QObject::connect(s, &QTcpSocket::readyRead, this, [this, s] { onData(s); });
                QObject::connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
            }
        });
        m_server.listen(QHostAddress::LocalHost, 0);
    }
    QUrl base() const { return QUrl(QStringLiteral("http://127.0.0.1:%1/v1.0/").arg(m_server.serverPort())); }
    int count(const QString& prefix) const
    {
        int n = 0;
        for (const QString& l : log) n += l.startsWith(prefix) ? 1 : 0;
        return n;
    }

private:
    void onData(QTcpSocket* s)
    {
        QByteArray& buf = m_buffers[s];
        buf += s->readAll();
        const qsizetype end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const QList<QByteArray> lines = buf.left(end).split('\n');
        m_buffers.remove(s);
        const QList<QByteArray> first = lines.value(0).trimmed().split(' ');
        const QByteArray method = first.value(0);
        const QString name = QString::fromLatin1(first.value(1)).section(QLatin1Char('/'), -1);
        qint64 from = -1;
        for (const QByteArray& l : lines) {
            if (l.toLower().startsWith("range:")) from = l.mid(l.indexOf('=') + 1).trimmed().chopped(1).toLongLong();
        }
        log << QStringLiteral("%1 %2 %3").arg(QString::fromLatin1(method), name).arg(from);
        if (!files.contains(name)) {
            s->write("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            s->disconnectFromHost();
            return;
        }
        const QByteArray& data = files[name];
        const qint64 total = claimTotal.value(name, data.size());
        QByteArray head;
        QByteArray body;
        if (from >= 0 && !ignoreRange) {
            if (from >= data.size()) {
                head = "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */" + QByteArray::number(total) +
                       "\r\nContent-Length: 0\r\n";
            } else {
                body = data.mid(from);
                head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + QByteArray::number(from) + '-' +
                       QByteArray::number(data.size() - 1) + '/' + QByteArray::number(total) +
                       "\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n";
            }
        } else {
            body = data;
            head = "HTTP/1.1 200 OK\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n";
        }
        head += "Connection: close\r\n\r\n";
        s->write(head);
        if (method == "GET") {
            if (cutAfter.contains(name)) {
                s->write(body.left(cutAfter.take(name)));
                s->flush();
                s->abort();  // the connection drops mid-file
                return;
            }
            s->write(body);
        }
        s->disconnectFromHost();
    }

    QTcpServer m_server;
    QHash<QTcpSocket*, QByteArray> m_buffers;
};

QByteArray randomBytes(int n, quint32 seed)
{
    QRandomGenerator gen(seed);
    QByteArray b(n, Qt::Uninitialized);
    for (int i = 0; i < n; ++i) b[i] = static_cast<char>(gen.bounded(256));
    return b;
}

void fillModel(FileServer& server)
{
    server.files[QStringLiteral("model.safetensors.index.json")] =
        R"({"metadata":{"total_size":500000},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})";
    for (const char* n : {"config.json", "generation_config.json", "preprocessor_config.json", "special_tokens_map.json",
                          "tokenizer_config.json"})
        server.files[QString::fromLatin1(n)] = QByteArray("{\"name\":\"") + n + "\"}";
    server.files[QStringLiteral("tokenizer.json")] = randomBytes(70000, 7);
    server.files[QStringLiteral("model-00001-of-00002.safetensors")] = randomBytes(300000, 1);
    server.files[QStringLiteral("model-00002-of-00002.safetensors")] = randomBytes(200000, 2);
}

// Runs a download to the end without blocking the event loop.
lector::Result<void> runDownload(ModelDownloader& d, const QString& dir)
{
    std::optional<lector::Result<void>> out;
    auto run = [&]() -> QCoro::Task<> { out = co_await d.download(dir); };  // outlives the coroutine
    run();
    (void)QTest::qWaitFor([&] { return out.has_value(); }, 20000);
    return out ? *out : lector::Result<void>(lector::makeError("timeout", "download did not finish"));
}

QByteArray readFile(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

}  // namespace

class TestModelDownload : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void downloadsEveryFile();
    void resumesWithRange();
    void sizeMismatchIsAnError();
    void completeFilesAreSkipped();
    void serverIgnoringRangeStillWorks();
};

void TestModelDownload::downloadsEveryFile()
{
    FileServer server;
    fillModel(server);
    QTemporaryDir dir;
    QNetworkAccessManager nam;
    ModelDownloader d(nam);
    d.setBaseUrl(server.base());
    QSignalSpy progress(&d, &ModelDownloader::fileProgress);
    QSignalSpy started(&d, &ModelDownloader::fileStarted);
    const auto r = runDownload(d, dir.path());
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message.c_str());
    for (auto it = server.files.begin(); it != server.files.end(); ++it) {
        QCOMPARE(readFile(QDir(dir.path()).filePath(it.key())), it.value());
        QVERIFY(!QFileInfo::exists(QDir(dir.path()).filePath(it.key() + QStringLiteral(".part"))));
    }
    QCOMPARE(started.count(), 9);  // 7 base files + 2 shards named by the index
    QVERIFY(progress.count() >= 9);
    QVERIFY(lector::ui::checkHunyuanFolder(dir.path()).ok);
}

void TestModelDownload::resumesWithRange()
{
    FileServer server;
    fillModel(server);
    const QString shard = QStringLiteral("model-00001-of-00002.safetensors");
    server.cutAfter[shard] = 120000;
    QTemporaryDir dir;
    QNetworkAccessManager nam;
    ModelDownloader d(nam);
    d.setBaseUrl(server.base());
    const auto first = runDownload(d, dir.path());
    QVERIFY(!first.ok());
    QCOMPARE(QString::fromStdString(first.error().code), QStringLiteral("network_error"));
    QVERIFY(QString::fromStdString(first.error().message).contains(shard));
    const qint64 partial = QFileInfo(QDir(dir.path()).filePath(shard + QStringLiteral(".part"))).size();
    QVERIFY(partial > 0 && partial <= 120000);
    QVERIFY(!QFileInfo::exists(QDir(dir.path()).filePath(shard)));

    const auto second = runDownload(d, dir.path());
    QVERIFY2(second.ok(), second.ok() ? "" : second.error().message.c_str());
    QVERIFY2(server.log.contains(QStringLiteral("GET %1 %2").arg(shard).arg(partial)), qPrintable(server.log.join(QLatin1Char('\n'))));
    QCOMPARE(readFile(QDir(dir.path()).filePath(shard)), server.files[shard]);
}

void TestModelDownload::sizeMismatchIsAnError()
{
    FileServer server;
    fillModel(server);
    const QString shard = QStringLiteral("model-00002-of-00002.safetensors");
    server.claimTotal[shard] = 200100;  // the server says more than it has
    QTemporaryDir dir;
    // A partial file makes the client ask for a range, where the total is announced.
    QFile part(QDir(dir.path()).filePath(shard + QStringLiteral(".part")));
    QVERIFY(part.open(QIODevice::WriteOnly));
    part.write(server.files[shard].left(1000));
    part.close();
    QNetworkAccessManager nam;
    ModelDownloader d(nam);
    d.setBaseUrl(server.base());
    const auto r = runDownload(d, dir.path());
    QVERIFY(!r.ok());
    QCOMPARE(QString::fromStdString(r.error().code), QStringLiteral("size_mismatch"));
    QVERIFY(QString::fromStdString(r.error().message).contains(QStringLiteral("200100")));
    QVERIFY(!QFileInfo::exists(QDir(dir.path()).filePath(shard)));  // never renamed into place
}

void TestModelDownload::completeFilesAreSkipped()
{
    FileServer server;
    fillModel(server);
    QTemporaryDir dir;
    QNetworkAccessManager nam;
    ModelDownloader d(nam);
    d.setBaseUrl(server.base());
    QVERIFY(runDownload(d, dir.path()).ok());
    server.log.clear();
    QSignalSpy skipped(&d, &ModelDownloader::fileSkipped);
    QVERIFY(runDownload(d, dir.path()).ok());
    QCOMPARE(skipped.count(), 9);
    QCOMPARE(server.count(QStringLiteral("GET")), 0);
    QCOMPARE(server.count(QStringLiteral("HEAD")), 9);
    // A file that changed size on the server is fetched again.
    server.files[QStringLiteral("config.json")] = "{\"name\":\"config.json\",\"v\":2}";
    QVERIFY(runDownload(d, dir.path()).ok());
    QCOMPARE(readFile(QDir(dir.path()).filePath(QStringLiteral("config.json"))), server.files[QStringLiteral("config.json")]);
}

void TestModelDownload::serverIgnoringRangeStillWorks()
{
    FileServer server;
    fillModel(server);
    const QString shard = QStringLiteral("tokenizer.json");
    server.ignoreRange = true;
    QTemporaryDir dir;
    QFile part(QDir(dir.path()).filePath(shard + QStringLiteral(".part")));
    QVERIFY(part.open(QIODevice::WriteOnly));
    part.write("garbage that is not the start of the file");
    part.close();
    QNetworkAccessManager nam;
    ModelDownloader d(nam);
    d.setBaseUrl(server.base());
    QVERIFY(runDownload(d, dir.path()).ok());
    QCOMPARE(readFile(QDir(dir.path()).filePath(shard)), server.files[shard]);
}

QTEST_MAIN(TestModelDownload)
#include "tst_model_download.moc"
