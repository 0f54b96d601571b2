#include "ui/batch_job.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>
#include <QSet>
#include <QtConcurrent/QtConcurrentRun>

#include "core/doc/export_json.h"
#include "core/doc/export_text.h"
#include "core/doc/result_writer.h"
#include "ui/folder_scan.h"
#include "ui/image_loader.h"

namespace lector::ui {
namespace {

const QString kManifestName = QStringLiteral(".lector-batch.json");
const QString kJournalName = QStringLiteral(".lector-batch.journal");
constexpr size_t kRateWindow = 32;

std::filesystem::path fsPath(const QString& p) { return std::filesystem::path(p.toStdString()); }

bool isPerImage(BatchFormat f) { return f == BatchFormat::JsonPerImage || f == BatchFormat::TextPerImage; }

}  // namespace

QString batchFormatId(BatchFormat format)
{
    switch (format) {
    case BatchFormat::JsonLines: return QStringLiteral("jsonl");
    case BatchFormat::Csv: return QStringLiteral("csv");
    case BatchFormat::JsonPerImage: return QStringLiteral("json");
    case BatchFormat::TextPerImage: return QStringLiteral("txt");
    }
    return {};
}

std::optional<BatchFormat> batchFormatFromId(const QString& id)
{
    for (BatchFormat f : {BatchFormat::JsonLines, BatchFormat::Csv, BatchFormat::JsonPerImage, BatchFormat::TextPerImage}) {
        if (batchFormatId(f) == id) return f;
    }
    return std::nullopt;
}

BatchJob::BatchJob(EngineBridge& bridge, BatchOptions options, QObject* parent)
    : QObject(parent), m_bridge(bridge), m_options(std::move(options))
{
    if (m_options.extensions.isEmpty()) m_options.extensions = defaultImageExtensions();
    m_options.maxInFlight = std::max(1, m_options.maxInFlight);
    connect(&m_bridge, &EngineBridge::finished, this, &BatchJob::onFinished);
}

BatchJob::~BatchJob()
{
    for (auto it = m_byTicket.begin(); it != m_byTicket.end(); ++it) m_bridge.cancel(it.key());
}

QString BatchJob::outputPath(const BatchOptions& o)
{
    const QDir out(o.outputDir);
    switch (o.format) {
    case BatchFormat::JsonLines: return out.filePath(QStringLiteral("lector-results.jsonl"));
    case BatchFormat::Csv: return out.filePath(QStringLiteral("lector-results.csv"));
    default: return out.absolutePath();
    }
}

QString BatchJob::perImagePath(const BatchOptions& o, const QString& relative)
{
    const QString ext = o.format == BatchFormat::TextPerImage ? QStringLiteral(".txt") : QStringLiteral(".json");
    // Flat output keeps names unique by folding the sub-folders into the name.
    const QString name = o.mirrorTree ? relative : QString(relative).replace(QLatin1Char('/'), QStringLiteral("__"));
    return QDir(o.outputDir).filePath(name + ext);
}

void BatchJob::setState(State state)
{
    if (m_state == state) return;
    m_state = state;
    Q_EMIT stateChanged(state);
}

void BatchJob::start()
{
    if (m_state != State::Idle) return;
    setState(State::Scanning);
    m_clock.start();
    const QString root = m_options.sourceDir;
    const bool recursive = m_options.recursive;
    const QStringList exts = m_options.extensions;
    QtConcurrent::run([root, recursive, exts]() {
        const QDir base(root);
        QStringList rel;
        for (const QString& abs : scanImages(root, recursive, exts)) rel << base.relativeFilePath(abs);
        return rel;
    }).then(this, [this](const QStringList& relative) { onScanned(relative); });
}

void BatchJob::onScanned(const QStringList& relative)
{
    if (m_state == State::Cancelling) {
        m_summary.cancelled = true;
        maybeFinish();
        return;
    }
    m_progress.total = static_cast<int>(relative.size());
    m_summary.total = m_progress.total;
    m_summary.output = outputPath(m_options);
    if (!QDir().mkpath(m_options.outputDir)) {
        m_summary.fatalError = tr("Cannot create the output folder %1").arg(QDir::toNativeSeparators(m_options.outputDir));
        setState(State::Finished);
        Q_EMIT finished(m_summary);
        return;
    }
    QList<BatchFailure> earlier;
    const QSet<QString> done = m_options.resume ? doneInOutput(&earlier) : QSet<QString>();
    if (!m_options.resume && isPerImage(m_options.format)) QFile::remove(QDir(m_options.outputDir).filePath(kJournalName));
    for (const QString& r : relative) {
        if (done.contains(r)) ++m_progress.skipped;
        else m_todo << r;
    }
    for (const BatchFailure& f : earlier) {
        if (relative.contains(f.image)) m_summary.failures << f;
    }
    m_progress.done = m_progress.skipped;
    m_summary.skipped = m_progress.skipped;
    if (auto opened = openOutput(); !opened) {
        m_summary.fatalError = QString::fromStdString(opened.error().message);
        setState(State::Finished);
        Q_EMIT finished(m_summary);
        return;
    }
    writeManifest(false);
    Q_EMIT scanned(m_progress.total, m_progress.skipped);
    Q_EMIT progressChanged(m_progress);
    setState(m_pausedSince >= 0 ? State::Paused : State::Running);
    pump();
    maybeFinish();
}

QSet<QString> BatchJob::doneInOutput(QList<BatchFailure>* earlierFailures) const
{
    QSet<QString> done;
    if (!isPerImage(m_options.format)) {
        const auto format = m_options.format == BatchFormat::Csv ? doc::OutputFormat::Csv : doc::OutputFormat::JsonLines;
        auto scan = doc::scanOutput(fsPath(outputPath(m_options)), format);
        if (!scan) return done;
        for (const auto& s : scan->done) done.insert(QString::fromStdString(s));
        for (const auto& s : scan->failed)
            earlierFailures->append({QString::fromStdString(s), tr("failed in an earlier run")});
        return done;
    }
    QFile journal(QDir(m_options.outputDir).filePath(kJournalName));
    if (!journal.open(QIODevice::ReadOnly)) return done;
    const QByteArray all = journal.readAll();
    // Only complete lines count: a kill may cut the last one.
    const qsizetype end = all.lastIndexOf('\n');
    for (const QByteArray& line : all.left(end + 1).split('\n')) {
        const QList<QByteArray> parts = line.split('\t');
        if (parts.size() < 2) continue;
        const QString rel = QString::fromUtf8(parts[1]);
        // A per-image file that vanished since is done again.
        if (parts[0] == "ok" && !QFileInfo::exists(perImagePath(m_options, rel))) continue;
        done.insert(rel);
        if (parts[0] == "failed") earlierFailures->append({rel, QString::fromUtf8(parts.value(2))});
    }
    return done;
}

Result<void> BatchJob::openOutput()
{
    if (isPerImage(m_options.format)) return {};
    const auto format = m_options.format == BatchFormat::Csv ? doc::OutputFormat::Csv : doc::OutputFormat::JsonLines;
    auto writer = doc::ResultWriter::open(fsPath(outputPath(m_options)), format, m_options.resume);
    if (!writer) return writer.error();
    m_writer = std::move(writer.value());
    return {};
}

void BatchJob::pause()
{
    if (m_state != State::Running && m_state != State::Scanning) return;
    m_pausedSince = m_clock.elapsed();
    if (m_state == State::Running) setState(State::Paused);
}

void BatchJob::resume()
{
    if (m_pausedSince < 0) return;
    m_pausedMs += m_clock.elapsed() - m_pausedSince;
    m_pausedSince = -1;
    m_recent.clear();  // the rate before the pause says little about now
    if (m_state == State::Paused) setState(State::Running);
    pump();
}

void BatchJob::cancel()
{
    if (m_state == State::Finished || m_state == State::Idle) return;
    const bool scanning = m_state == State::Scanning;
    setState(State::Cancelling);
    m_summary.cancelled = true;
    for (auto it = m_byTicket.begin(); it != m_byTicket.end(); ++it) m_bridge.cancel(it.key());
    if (!scanning) maybeFinish();
}

void BatchJob::pump()
{
    while (m_state == State::Running && m_inFlight < m_options.maxInFlight && m_next < m_todo.size()) {
        const QString rel = m_todo.at(m_next++);
        ++m_inFlight;
        loadImageAsync(QDir(m_options.sourceDir).filePath(rel), false)
            .then(this, [this, rel](const LoadedImage& loaded) { onLoaded(rel, loaded); });
    }
}

void BatchJob::onLoaded(const QString& relative, const LoadedImage& loaded)
{
    if (m_state == State::Cancelling || m_state == State::Finished) {
        --m_inFlight;  // never submitted: stays undone, a resumed job runs it
        maybeFinish();
        return;
    }
    if (!loaded.ok()) {
        record(relative, doc::makeErrorResult(relative.toStdString(), loaded.error));
        return;
    }
    engine::Request request = m_options.requestTemplate;
    request.imageName = relative.toStdString();
    request.image = loaded.image;
    request.decodeMs = loaded.decodeMs;
    request.createdAt = engine::Clock::now();
    auto ticket = m_bridge.submit(std::move(request));
    if (!ticket) {
        record(relative, doc::makeErrorResult(relative.toStdString(), ticket.error()));
        return;
    }
    m_byTicket.insert(ticket.value(), relative);
}

void BatchJob::onFinished(EngineBridge::Ticket ticket, const doc::OcrResult& result)
{
    const auto it = m_byTicket.find(ticket);
    if (it == m_byTicket.end()) return;
    const QString relative = it.value();
    m_byTicket.erase(it);
    if (result.error && result.error->code == "cancelled") {
        --m_inFlight;  // not written: a resumed job runs it again
        maybeFinish();
        return;
    }
    record(relative, result);
}

void BatchJob::record(const QString& relative, const doc::OcrResult& result)
{
    --m_inFlight;
    if (m_state == State::Finished) return;
    if (auto written = writeResult(relative, result); !written) {
        m_summary.fatalError = QString::fromStdString(written.error().message);
        cancel();
        return;
    }
    if (result.failed()) {
        const QString message = QString::fromStdString(result.error->message);
        ++m_progress.failed;
        m_summary.failures << BatchFailure{relative, message};
        Q_EMIT imageFailed(relative, message);
    }
    ++m_summary.processed;
    completeOne(relative);
    pump();
    maybeFinish();
}

Result<void> BatchJob::writeResult(const QString& relative, const doc::OcrResult& result)
{
    if (m_writer) return m_writer->write(result);
    const QString target = perImagePath(m_options, relative);
    const bool writeFile = !(m_options.format == BatchFormat::TextPerImage && result.failed());
    if (writeFile) {
        QDir().mkpath(QFileInfo(target).absolutePath());
        QSaveFile file(target);  // whole file or nothing, even when killed mid-write
        const std::string bytes = m_options.format == BatchFormat::TextPerImage ? doc::toPlainText(result) + "\n"
                                                                                : doc::toJsonText({result});
        if (!file.open(QIODevice::WriteOnly) || file.write(bytes.data(), static_cast<qint64>(bytes.size())) < 0 ||
            !file.commit())
            return makeError("write_failed", target.toStdString() + ": " + file.errorString().toStdString());
    }
    QFile journal(QDir(m_options.outputDir).filePath(kJournalName));
    if (!journal.open(QIODevice::WriteOnly | QIODevice::Append))
        return makeError("write_failed", journal.fileName().toStdString() + ": " + journal.errorString().toStdString());
    QByteArray line = (result.failed() ? QByteArrayLiteral("failed\t") : QByteArrayLiteral("ok\t")) + relative.toUtf8();
    if (result.failed()) line += '\t' + QString::fromStdString(result.error->message).simplified().toUtf8();
    line += '\n';
    if (journal.write(line) != line.size() || !journal.flush())
        return makeError("write_failed", journal.fileName().toStdString() + ": " + journal.errorString().toStdString());
    return {};
}

void BatchJob::completeOne(const QString& relative)
{
    ++m_progress.done;
    m_progress.current = relative;
    m_recent.push_back(m_clock.elapsed() - m_pausedMs);
    if (m_recent.size() > kRateWindow) m_recent.pop_front();
    updateRate();
    Q_EMIT progressChanged(m_progress);
}

void BatchJob::updateRate()
{
    // Rate over the recent window (at least 2 completions), so it follows speed changes; before
    // that, over this run's active time.
    double rate = 0;
    if (m_recent.size() >= 2 && m_recent.back() > m_recent.front())
        rate = (m_recent.size() - 1) * 1000.0 / static_cast<double>(m_recent.back() - m_recent.front());
    else if (m_summary.processed > 0)
        rate = m_summary.processed * 1000.0 / std::max<qint64>(1, m_clock.elapsed() - m_pausedMs);
    m_progress.imagesPerSecond = rate;
    const int remaining = m_progress.total - m_progress.done;
    m_progress.etaSeconds = rate > 0 ? remaining / rate : -1;
}

void BatchJob::maybeFinish()
{
    if (m_state == State::Finished || m_inFlight > 0) return;
    const bool allDone = m_next >= m_todo.size() && (m_state == State::Running || m_state == State::Paused);
    if (!allDone && m_state != State::Cancelling) return;
    if (m_writer) {
        if (auto closed = m_writer->close(); !closed && m_summary.fatalError.isEmpty())
            m_summary.fatalError = QString::fromStdString(closed.error().message);
        m_writer.reset();
    }
    m_summary.seconds = (m_clock.isValid() ? m_clock.elapsed() - m_pausedMs : 0) / 1000.0;
    if (allDone && !m_summary.cancelled) writeManifest(true);
    m_progress.etaSeconds = allDone ? 0 : -1;
    setState(State::Finished);
    Q_EMIT finished(m_summary);
}

void BatchJob::writeManifest(bool complete) const
{
    QJsonObject o;
    o.insert(QStringLiteral("sourceDir"), QDir(m_options.sourceDir).absolutePath());
    o.insert(QStringLiteral("recursive"), m_options.recursive);
    o.insert(QStringLiteral("extensions"), QJsonArray::fromStringList(m_options.extensions));
    o.insert(QStringLiteral("format"), batchFormatId(m_options.format));
    o.insert(QStringLiteral("mirrorTree"), m_options.mirrorTree);
    o.insert(QStringLiteral("preset"), QString::fromStdString(m_options.requestTemplate.preset));
    o.insert(QStringLiteral("total"), m_progress.total);
    o.insert(QStringLiteral("complete"), complete);
    QSaveFile f(QDir(m_options.outputDir).filePath(kManifestName));
    if (f.open(QIODevice::WriteOnly)) {
        f.write(QJsonDocument(o).toJson());
        f.commit();
    }
}

std::optional<BatchOptions> BatchJob::readManifest(const QString& outputDir)
{
    QFile f(QDir(outputDir).filePath(kManifestName));
    if (!f.open(QIODevice::ReadOnly)) return std::nullopt;
    const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
    const auto format = batchFormatFromId(o.value(QStringLiteral("format")).toString());
    if (o.isEmpty() || !format || o.value(QStringLiteral("complete")).toBool()) return std::nullopt;
    BatchOptions opts;
    opts.sourceDir = o.value(QStringLiteral("sourceDir")).toString();
    opts.recursive = o.value(QStringLiteral("recursive")).toBool(true);
    for (const auto& v : o.value(QStringLiteral("extensions")).toArray()) opts.extensions << v.toString();
    opts.format = *format;
    opts.outputDir = outputDir;
    opts.mirrorTree = o.value(QStringLiteral("mirrorTree")).toBool(true);
    opts.requestTemplate.preset = o.value(QStringLiteral("preset")).toString(QStringLiteral("text")).toStdString();
    return opts;
}

}  // namespace lector::ui
